#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "store/rpc/connection.h"
#include "store/rpc/server.h"

namespace mkube::store::rpc {

// A warning that may repeat many times a second (a client flood, a full descriptor table)
// written at most once per interval, with how many were held back since the last one.
class ThrottledLog {
 public:
  explicit ThrottledLog(std::chrono::seconds interval = std::chrono::seconds(10))
      : interval_(interval) {}
  // Whether to write now; `held` is set to the number not written since the last time.
  bool Due(size_t* held) {
    const auto now = std::chrono::steady_clock::now();
    if (written_ && now < last_ + interval_) {
      ++held_;
      return false;
    }
    written_ = true;
    last_ = now;
    *held = held_;
    held_ = 0;
    return true;
  }

 private:
  const std::chrono::seconds interval_;
  bool written_ = false;
  std::chrono::steady_clock::time_point last_;
  size_t held_ = 0;
};

// One event loop: its connections, and an inbox other threads post to. Everything but the
// inbox (and the atomics) belongs to the loop's thread.
class Loop {
 public:
  Loop(const absl::flat_hash_map<std::string, Server::Method>* methods,
       const ServerOptions& options, std::atomic<int>* in_flight, std::atomic<size_t>* connections,
       std::atomic<size_t>* partial_bytes)
      : methods_(methods),
        max_message_(options.max_message_bytes),
        max_connection_backlog_(options.max_connection_backlog_bytes),
        max_stream_messages_(options.max_stream_queued_messages),
        max_connections_(options.max_connections),
        max_streams_(options.max_concurrent_streams),
        max_connection_partial_(options.max_connection_partial_bytes),
        max_total_partial_(options.max_total_partial_bytes),
        tls_(options.tls),

        in_flight_(in_flight),
        connections_(connections),
        partial_bytes_(partial_bytes) {}
  ~Loop();

  absl::Status Init();
  void Start(int listen_fd, std::vector<std::unique_ptr<Loop>>* all);
  // Any thread.
  void Post(Outgoing o) ABSL_LOCKS_EXCLUDED(mu_);
  void Join() {
    if (thread_.joinable()) thread_.join();
  }

  void MarkDirty(Connection* c);
  // Free memory goes back to the system before the loop next waits (a connection that held
  // much of it is closed; malloc keeps what is freed).
  void ReleaseMemorySoon() { release_memory_ = true; }
  void Retire(std::shared_ptr<Connection> c);
  // Calls a unary handler. The first call of a round of events waits for the round's end:
  // if it is still the only one and nothing waits to be sent, it runs quiet().
  void DispatchUnary(const Server::Method* method, std::string_view request, Responder responder);
  int epoll_fd() const { return epfd_; }
  const absl::flat_hash_map<std::string, Server::Method>& methods() const { return *methods_; }
  size_t max_message() const { return max_message_; }
  size_t max_connection_backlog() const { return max_connection_backlog_; }
  size_t max_stream_messages() const { return max_stream_messages_; }
  uint32_t max_streams() const { return max_streams_; }
  size_t max_connection_partial() const { return max_connection_partial_; }
  // Adds to the bytes of partly received messages of every loop; whether they are now over
  // the total limit.
  bool AddPartial(int64_t delta) {
    const size_t d = static_cast<size_t>(delta);
    return partial_bytes_->fetch_add(d, std::memory_order_relaxed) + d > max_total_partial_;
  }
  std::atomic<int>& in_flight() { return *in_flight_; }

  // A connection's TLS failed (a handshake with a client the server does not trust, a bad
  // record): logged at most once per 10 s.
  void TlsFailed(const absl::Status& why);
  char* read_buffer() { return read_buffer_.data(); }
  size_t read_buffer_size() const { return read_buffer_.size(); }

 private:
  void Run() ABSL_LOCKS_EXCLUDED(mu_);
  void Accept();
  // Out of descriptors (or kernel memory): the listener leaves epoll for a while, doubling
  // from 5 ms to 1 s while it lasts, instead of waking the loop again at once.
  void PauseAccept(int error);
  void ResumeAcceptIfDue();
  // Milliseconds epoll may wait: until accepting resumes, or forever.
  int WaitTimeout() const;
  // Over max_connections: told so in a GOAWAY, then closed.
  void Refuse(int fd);
  void Adopt(int fd);
  void Closed() { connections_->fetch_sub(1, std::memory_order_relaxed); }

 public:
  // The call `id` on `c` ends with DEADLINE_EXCEEDED at `when` if it is still open then.
  void AddDeadline(std::chrono::steady_clock::time_point when, Connection* c, uint32_t id);

 private:
  // Ends the calls whose deadlines have passed.
  void ExpireDeadlines();
  void Drain() ABSL_LOCKS_EXCLUDED(mu_);
  void Flush();
  void RunDeferred(bool quiet);

  const absl::flat_hash_map<std::string, Server::Method>* methods_;
  const size_t max_message_;
  const size_t max_connection_backlog_;
  const size_t max_stream_messages_;
  const size_t max_connections_;
  const uint32_t max_streams_;
  const size_t max_connection_partial_;
  const size_t max_total_partial_;
  const std::shared_ptr<TlsContext> tls_;
  std::atomic<int>* in_flight_;
  std::atomic<size_t>* connections_;
  std::atomic<size_t>* partial_bytes_;
  int epfd_ = -1;
  int efd_ = -1;
  int listen_fd_ = -1;
  std::vector<std::unique_ptr<Loop>>* all_ = nullptr;
  size_t next_loop_ = 0;
  std::thread thread_;
  std::atomic<std::thread::id> thread_id_{};

  absl::Mutex mu_;
  // Work posted from other threads (and the loop's own handlers), taken whole after every
  // round of events: the loop thread waits for nothing but epoll (and a quiet() call), so this
  // holds what arrives during one round. Not capped here, since nothing in it may be dropped
  // (answers, a call's end), but bounded by its producers: an answer per call in flight (the
  // calls bounded by the connections' streams, writes also by the store's queue); stream
  // messages from other threads by the watch sink's high water, which counts them from
  // Write on (queued_bytes()), and from this loop's handlers by the round's input; one
  // adoption per accepted socket. Past Drain, Connection's limits apply: what is posted for a
  // connection closed over its backlog limit is dropped there.
  std::vector<Outgoing> inbox_ ABSL_GUARDED_BY(mu_);
  // Set by the poster that wrote the eventfd, cleared by the loop thread when it reads it.
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
  bool own_posts_ = false;  // the loop posted to its own inbox since the last Drain
  bool release_memory_ = false;
  bool going_away_ = false;
  bool stop_ = false;
  // Accepting, paused after running out of descriptors (loop 0's listener only).
  bool accept_paused_ = false;
  std::chrono::milliseconds accept_delay_{0};
  std::chrono::steady_clock::time_point accept_resume_;
  ThrottledLog accept_log_;
  ThrottledLog tls_log_;
  // Deadlines of calls that sent grpc-timeout, soonest first. An entry may outlive its call;
  // it is dropped when due, or swept with the other stale ones (AddDeadline).
  struct Deadline {
    std::chrono::steady_clock::time_point when;
    std::weak_ptr<Connection> conn;
    uint32_t stream;
    bool operator>(const Deadline& o) const { return when > o.when; }
  };
  std::priority_queue<Deadline, std::vector<Deadline>, std::greater<>> deadlines_;
  size_t sweep_at_ = 1024;
};

}  // namespace mkube::store::rpc
