#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "store/rpc/connection.h"
#include "store/rpc/server.h"

namespace mkube::store::rpc {

// One event loop: its connections, and an inbox other threads post to.
class Loop {
 public:
  Loop(const absl::flat_hash_map<std::string, Server::Method>* methods, size_t max_message,
       std::atomic<int>* in_flight)
      : methods_(methods), max_message_(max_message), in_flight_(in_flight) {}
  ~Loop();

  absl::Status Init();
  void Start(int listen_fd, std::vector<std::unique_ptr<Loop>>* all);
  void Post(Outgoing o);
  void Join() {
    if (thread_.joinable()) thread_.join();
  }

  void MarkDirty(Connection* c);
  void Retire(std::shared_ptr<Connection> c);
  // Calls a unary handler. The first call of a round of events waits for the round's end:
  // if it is still the only one and nothing waits to be sent, it runs quiet().
  void DispatchUnary(const Server::Method* method, std::string_view request, Responder responder);
  int epoll_fd() const { return epfd_; }
  const absl::flat_hash_map<std::string, Server::Method>& methods() const { return *methods_; }
  size_t max_message() const { return max_message_; }
  std::atomic<int>& in_flight() { return *in_flight_; }
  char* read_buffer() { return read_buffer_.data(); }
  size_t read_buffer_size() const { return read_buffer_.size(); }

 private:
  void Run();
  void Accept();
  void Adopt(int fd);
  void Drain();
  void Flush();
  void RunDeferred(bool quiet);

  const absl::flat_hash_map<std::string, Server::Method>* methods_;
  const size_t max_message_;
  std::atomic<int>* in_flight_;
  int epfd_ = -1;
  int efd_ = -1;
  int listen_fd_ = -1;
  std::vector<std::unique_ptr<Loop>>* all_ = nullptr;
  size_t next_loop_ = 0;
  std::thread thread_;
  std::atomic<std::thread::id> thread_id_{};

  std::mutex mu_;
  std::vector<Outgoing> inbox_;
  std::atomic<bool> notified_{false};

  absl::flat_hash_map<Connection*, std::shared_ptr<Connection>> conns_;
  std::vector<std::shared_ptr<Connection>> graveyard_;
  std::vector<Connection*> dirty_;
  std::vector<char> read_buffer_ = std::vector<char>(256 << 10);
  // The round's first unary call, held back until the round ends.
  struct Deferred {
    const Server::Method* method = nullptr;
    std::string request;
    Responder responder;
  };
  std::optional<Deferred> deferred_;
  int round_calls_ = 0;
  bool going_away_ = false;
  bool stop_ = false;
};

}  // namespace mkube::store::rpc
