#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "api/kinds.h"
#include "base/status.h"
#include "cli/kubeconfig.h"
#include "cli/resources.h"
#include "nlohmann/json.hpp"

namespace mkube::cli {

using json = nlohmann::ordered_json;

// An error already worded as the line the user sees (mkubectl prints its message as is).
absl::Status UserError(std::string line);
// A failure whose lines were printed already: exit 1, print nothing more.
absl::Status Reported();
// A failure that exits with `code` (a remote command's), after printing `line` if not empty.
absl::Status ExitWith(int code, std::string line);
// The exit code a failed command's status asks for (1 unless ExitWith said otherwise).
int ExitCodeOf(const absl::Status& st);

// The flags every command takes.
struct Globals {
  std::string kubeconfig, server, token, ns, request_timeout = "0";
};

// One invocation's connection to the apiserver, from the kubeconfig and the global flags.
class Session {
 public:
  static absl::StatusOr<std::unique_ptr<Session>> Open(const Globals& g);

  Resources& res() { return *resources_; }
  // How this session reaches the apiserver, for services the client does not wrap.
  const client::ClientOptions& client_options() const { return options_; }
  const std::string& ns() const { return cfg_.namespace_; }
  // The namespace flag as given (empty when not).
  const std::string& ns_flag() const { return ns_flag_; }
  const std::string& server() const { return cfg_.server; }

  // A server's error as kubectl words it ("Error from server (NotFound): ...").
  absl::Status Worded(const absl::Status& st) const;
  template <typename T>
  absl::StatusOr<T> Worded(absl::StatusOr<T> r) const {
    if (!r.ok()) return Worded(r.status());
    return r;
  }
  // Prints a server's error as kubectl does, on stderr.
  void PrintError(const absl::Status& st) const;

 private:
  Session() = default;
  KubeConfig cfg_;
  std::string ns_flag_;
  client::ClientOptions options_;
  std::unique_ptr<client::GrpcClient> client_;
  std::unique_ptr<Resources> resources_;
};

// By any name a user types, or kubectl's error for an unknown resource type.
absl::StatusOr<const api::KindInfo*> KindNamed(const std::string& name);

// "pod/x" or "pods x y": the objects a command names (name empty: all of the kind).
struct Target {
  const api::KindInfo* kind;
  std::string name;
};
absl::StatusOr<std::vector<Target>> ParseTargets(const std::vector<std::string>& args,
                                                 bool names_required);

// A --timeout or --grace-period style duration flag.
absl::StatusOr<std::chrono::seconds> DurationFlag(const std::string& text, const std::string& flag);

// Waits until the object is gone (timeout 0: a week, as kubectl); false on timeout.
bool WaitGone(Session& s, const api::KindInfo& kind, const std::string& ns, const std::string& name,
              std::chrono::seconds timeout);

// "No resources found in default namespace." as kubectl prints it, on stderr.
void NoResources(const Session& s, const api::KindInfo& kind, bool all_namespaces);

}  // namespace mkube::cli
