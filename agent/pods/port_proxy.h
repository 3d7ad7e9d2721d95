#pragma once

#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace mkube::agent::pods {

// hostPort: TCP connections to hostIP:hostPort are forwarded to podIP:containerPort, by one
// thread for all ports (epoll; each direction buffered up to 64 KiB, so a slow reader slows
// its writer rather than filling memory).
class PortProxy {
 public:
  PortProxy();
  ~PortProxy();
  PortProxy(const PortProxy&) = delete;
  PortProxy& operator=(const PortProxy&) = delete;

  // Listens on ip:port and forwards to target_ip:target_port under `id` (one per pod and
  // port); an error names the address (already in use, say).
  absl::Status Open(const std::string& id, const std::string& ip, int port,
                    const std::string& target_ip, int target_port) ABSL_LOCKS_EXCLUDED(mu_);
  // Stops listening and drops the connections of `id`.
  void Close(const std::string& id) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Listener;
  struct Conn;
  void Loop();
  void Accept(Listener* l);
  void Pump(Conn* c, bool from_client);
  void Flush(Conn* c, bool to_client);
  void Drop(Conn* c);
  void Watch(Conn* c);
  void Retire(std::unique_ptr<Listener> l) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  int epoll_ = -1;
  int wake_ = -1;  // eventfd: Open/Close/stop have something for the loop
  std::thread thread_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, std::unique_ptr<Listener>> listeners_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<Listener>> closing_ ABSL_GUARDED_BY(mu_);
};

}  // namespace mkube::agent::pods
