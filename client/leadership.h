#pragma once

#include <unistd.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/daemon.h"
#include "client/client.h"
#include "client/leader_election.h"

// Leader election as the scheduler and the controller-manager run it.
namespace mkube::client {

// The --leader-elect* flags kube-scheduler and kube-controller-manager share, and the run
// they govern: `lead` is called once this process holds the Lease (at once without leader
// election); a leader that loses its Lease exits (status 1) to start again as a candidate, as
// Kubernetes' daemons do; Release gives it up on purpose (a signal), without exiting.
class Leadership {
 public:
  struct Flags {
    bool enabled = true;
    std::string lease_duration = "15s", renew_deadline = "10s", retry_period = "2s";
    std::string resource_name, resource_namespace = "kube-system";
    std::string identity = daemon::Hostname() + "_" + std::to_string(getpid());
  };
  // Adds the flags to `app`; `who` names the daemon in the help ("one scheduler of several").
  static void Register(CLI::App& app, Flags* flags, const std::string& who);
  // Checks the flags' durations; the error names the flag.
  static absl::Status Check(const Flags& flags);

  // Starts the election (flags already checked) through `client`.
  Leadership(ApiClient* client, const Flags& flags, std::function<void()> lead);
  // The same through a client of its own to the apiserver `options` name (ElectionClient):
  // the daemon's busy connection does not hold up its renewals.
  Leadership(const ClientOptions& options, const Flags& flags, std::function<void()> lead);
  ~Leadership() { Release(); }
  void Release();

 private:
  void Start(ApiClient* client, const Flags& flags, std::function<void()> lead);

  std::atomic<bool> releasing_{false};
  std::unique_ptr<ApiClient> own_client_;
  std::unique_ptr<LeaderElector> elector_;
};

// The options of a leader's client, as kube-scheduler gives leader election a client of its
// own: its own connection; calls that wait through a reconnect (a restarted apiserver or
// store) but each end within a fifth of the renew deadline, so that several tries fit in it
// and the last one (a read and a write) ends before the lease can expire for the others; no
// repeated reads, since the election's loop tries again itself.
ClientOptions ElectionClientOptions(ClientOptions options, const Leadership::Flags& flags);

}  // namespace mkube::client
