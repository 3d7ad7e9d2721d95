#include "agent/server/agent_service.h"

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "agent/runtime/cri_log.h"
#include "agent/runtime/process.h"
#include "base/log.h"
#include "fmt/format.h"
#include "proto/grpc_status.h"
#include "spdlog/spdlog.h"

namespace mkube::agent::server {
namespace {

spdlog::logger& Log() {
  static spdlog::logger& log = log::Logger("service");
  return log;
}

constexpr size_t kChunk = 32 * 1024;

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { Reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void Reset(int fd = -1) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

using ExecStream = grpc::ServerReaderWriter<ExecOutput, ExecInput>;

// An exec's standard descriptors: with a terminal, one pty for everything; else pipes (stdin
// only if asked). The agent keeps its ends; the command's are held until it has them.
struct ExecStdio {
  bool tty = false;
  Fd in_w, out_r, err_r, master;                                // the agent's ends
  Fd slave_keep, in_r_keep, out_w_keep, err_w_keep, null_keep;  // the command's
  runtime::StdFds child;  // what the command gets as 0, 1 and 2

  grpc::Status Open(const ExecStart& start) {
    tty = start.tty();
    if (tty) return OpenTerminal(start.size());
    int p[2];
    if (start.stdin()) {
      if (pipe2(p, O_CLOEXEC) != 0) return {grpc::StatusCode::INTERNAL, "pipe"};
      in_r_keep.Reset(p[0]);
      in_w.Reset(p[1]);
      child.in = p[0];
    } else {
      null_keep.Reset(open("/dev/null", O_RDONLY | O_CLOEXEC));
      child.in = null_keep.get();
    }
    if (pipe2(p, O_CLOEXEC) != 0) return {grpc::StatusCode::INTERNAL, "pipe"};
    out_r.Reset(p[0]);
    out_w_keep.Reset(p[1]);
    child.out = p[1];
    if (pipe2(p, O_CLOEXEC) != 0) return {grpc::StatusCode::INTERNAL, "pipe"};
    err_r.Reset(p[0]);
    err_w_keep.Reset(p[1]);
    child.err = p[1];
    return grpc::Status::OK;
  }

  grpc::Status OpenTerminal(const TerminalSize& size) {
    int m = -1, s = -1;
    winsize ws{};
    ws.ws_row = static_cast<unsigned short>(size.rows() ? size.rows() : 24);
    ws.ws_col = static_cast<unsigned short>(size.cols() ? size.cols() : 80);
    if (openpty(&m, &s, nullptr, nullptr, &ws) != 0) {
      return {grpc::StatusCode::INTERNAL, fmt::format("openpty: {}", std::strerror(errno))};
    }
    fcntl(m, F_SETFD, FD_CLOEXEC);
    fcntl(s, F_SETFD, FD_CLOEXEC);
    master.Reset(m);
    slave_keep.Reset(s);
    child.in = child.out = child.err = s;
    child.tty = true;
    char name[64] = "";
    ptsname_r(master.get(), name, sizeof name);
    child.tty_path = name;
    return grpc::Status::OK;
  }

  void CloseChildEnds() {
    slave_keep.Reset();
    in_r_keep.Reset();
    out_w_keep.Reset();
    err_w_keep.Reset();
    null_keep.Reset();
  }
};

// Writes all of `data` to fd (stopping at an error).
void WriteFully(int fd, const std::string& data) {
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    const ssize_t n = write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

// The caller's input (stdin, terminal resizes, the end of its input) passed on to the
// command, on a thread of its own so that a quiet client does not hold up the output.
class InputPump {
 public:
  InputPump(ExecStream* stream, ExecStdio* io) : thread_([this, stream, io] { Run(stream, io); }) {}

  // Whether the caller has half-closed, waiting up to `timeout` for it.
  bool AwaitHangUp(absl::Duration timeout) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return mu_.AwaitWithTimeout(absl::Condition(&done_), timeout);
  }
  void Join() { thread_.join(); }

 private:
  void Run(ExecStream* stream, ExecStdio* io) ABSL_LOCKS_EXCLUDED(mu_) {
    const int input_fd = io->tty ? io->master.get() : io->in_w.get();
    ExecInput in;
    while (stream->Read(&in)) {
      if (in.has_resize() && io->tty) {
        winsize ws{};
        ws.ws_row = static_cast<unsigned short>(in.resize().rows());
        ws.ws_col = static_cast<unsigned short>(in.resize().cols());
        ioctl(io->master.get(), TIOCSWINSZ, &ws);
      }
      if (!in.stdin().empty() && input_fd >= 0) WriteFully(input_fd, in.stdin());
      if (in.stdin_closed()) {
        if (io->tty) {
          const char eot = 4;  // ^D: end of input on a terminal
          (void)!write(io->master.get(), &eot, 1);
        } else {
          io->in_w.Reset();
        }
      }
    }
    absl::MutexLock lock(&mu_);
    done_ = true;
  }

  absl::Mutex mu_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: it starts once the rest is there
};

// The command's output passed on until its ends are closed; false when the caller went away.
bool CopyOutput(grpc::ServerContext* ctx, ExecStream* stream, const ExecStdio& io) {
  std::vector<std::pair<int, bool>> outs;  // fd, is stderr
  if (io.tty) {
    outs.push_back({io.master.get(), false});
  } else {
    outs.push_back({io.out_r.get(), false});
    outs.push_back({io.err_r.get(), true});
  }
  std::string buf(kChunk, '\0');
  while (!outs.empty()) {
    std::vector<pollfd> pfds;
    for (auto [fd, err] : outs) pfds.push_back({fd, POLLIN, 0});
    const int r = poll(pfds.data(), pfds.size(), 200);
    if (ctx->IsCancelled()) return false;
    if (r <= 0) continue;
    bool cancelled = false;
    for (size_t i = pfds.size(); i-- > 0;) {
      if (!(pfds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = read(pfds[i].fd, buf.data(), buf.size());
      if (n <= 0) {  // EOF (EIO on a pty whose other side is gone)
        outs.erase(outs.begin() + static_cast<long>(i));
        continue;
      }
      ExecOutput out;
      if (outs[i].second) {
        out.set_stderr(buf.data(), static_cast<size_t>(n));
      } else {
        out.set_stdout(buf.data(), static_cast<size_t>(n));
      }
      if (!stream->Write(out)) cancelled = true;
    }
    if (cancelled) return false;
  }
  return true;
}

// Waits for the command (killed first when the caller went away) and whatever it left running
// in its group; a caller still there gets its exit code.
void FinishCommand(pid_t pid, bool cancelled, ExecStream* stream) {
  int status = 0;
  if (cancelled) {
    kill(-pid, SIGKILL);
    waitpid(pid, &status, 0);
    return;
  }
  waitpid(pid, &status, 0);
  kill(-pid, SIGKILL);  // whatever it left running in its group
  ExecOutput last;
  last.set_exit_code(runtime::ExitFromWaitStatus(status).exit_code);
  stream->Write(last);
}

// How a log request wants the log shown (since: the later of its time and its seconds).
runtime::crilog::ReadOptions ReadOptionsOf(const LogRequest& req) {
  runtime::crilog::ReadOptions o;
  o.since_nanos = req.since_unix_nanos();
  if (req.has_since_seconds()) {
    const int64_t now = absl::ToUnixNanos(absl::Now());
    o.since_nanos = std::max(o.since_nanos, now - req.since_seconds() * 1'000'000'000);
  }
  o.timestamps = req.timestamps();
  if (req.has_limit_bytes()) o.limit_bytes = req.limit_bytes();
  return o;
}

}  // namespace

int64_t TailOffset(int fd, int64_t lines) {
  struct stat sb {};
  if (fstat(fd, &sb) != 0 || lines < 0) return 0;
  int64_t pos = sb.st_size;
  if (lines == 0) return pos;
  int64_t seen = 0;
  char buf[8192];
  // A last line without its newline counts as a line too.
  bool first = true;
  while (pos > 0) {
    const int64_t n = std::min<int64_t>(pos, sizeof buf);
    pos -= n;
    if (pread(fd, buf, static_cast<size_t>(n), pos) != n) return 0;
    for (int64_t i = n - 1; i >= 0; --i) {
      if (first) {
        first = false;
        if (buf[i] == '\n') continue;  // the newline that ends the last line
      }
      if (buf[i] == '\n' && ++seen == lines) return pos + i + 1;
    }
  }
  return 0;
}

grpc::Status StatsService::Summary(grpc::ServerContext* ctx, const SummaryRequest*,
                                   SummaryReply* reply) {
  if (auto st = auth_->Check(ctx); !st.ok()) return st;
  *reply = usage_->Summary();
  return grpc::Status::OK;
}

grpc::Status AgentService::Logs(grpc::ServerContext* ctx, const LogRequest* req,
                                grpc::ServerWriter<LogChunk>* writer) {
  if (auto st = auth_->Check(ctx); !st.ok()) return st;
  auto target = pods_->Logs(req->namespace_(), req->pod(), req->pod_uid(), req->container(),
                            req->previous());
  if (!target.ok()) return ToGrpc(target.status());
  // An empty first message: the log is there (errors before it come as the call's status).
  if (!writer->Write(LogChunk())) return grpc::Status::OK;
  Fd fd(open(target->path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0 && !req->follow()) return grpc::Status::OK;  // it never wrote anything
  while (fd.get() < 0) {  // following a container that has not written yet
    if (ctx->IsCancelled() || !target->running()) return grpc::Status::OK;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    fd.Reset(open(target->path.c_str(), O_RDONLY | O_CLOEXEC));
  }
  int64_t offset = req->has_tail_lines() ? TailOffset(fd.get(), req->tail_lines()) : 0;
  runtime::crilog::Decoder decoder(ReadOptionsOf(*req));
  std::string buf(kChunk, '\0');
  for (;;) {
    // Read to the end; when following, look again until the instance has stopped (one more
    // read after that catches what it wrote last).
    const bool was_running = req->follow() && target->running();
    for (;;) {
      const ssize_t n = pread(fd.get(), buf.data(), buf.size(), offset);
      if (n <= 0) break;
      offset += n;
      LogChunk chunk;
      chunk.set_data(decoder.Feed(std::string_view(buf.data(), static_cast<size_t>(n))));
      if (!chunk.data().empty() && !writer->Write(chunk)) return grpc::Status::OK;  // gone
      if (decoder.done()) return grpc::Status::OK;
    }
    if (!was_running || ctx->IsCancelled()) return grpc::Status::OK;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

grpc::Status AgentService::Exec(grpc::ServerContext* ctx, ExecStream* stream) {
  if (auto st = auth_->Check(ctx); !st.ok()) return st;
  ExecInput first;
  if (!stream->Read(&first) || !first.has_start()) {
    return {grpc::StatusCode::INVALID_ARGUMENT, "the first message must say what to run"};
  }
  const ExecStart& start = first.start();
  if (start.command().empty()) {
    return {grpc::StatusCode::INVALID_ARGUMENT, "you must specify at least one command for the container"};
  }
  auto target = pods_->Exec(start.namespace_(), start.pod(), start.pod_uid(), start.container());
  if (!target.ok()) return ToGrpc(target.status());
  std::vector<std::string> argv(start.command().begin(), start.command().end());

  ExecStdio io;
  if (auto st = io.Open(start); !st.ok()) return st;
  auto spawned = runtime::SpawnInContainer(*target, argv, io.child);
  if (!spawned.ok()) {
    // As a runtime reports it: the command could not be started at all.
    const auto code = absl::IsInternal(spawned.status()) ? grpc::StatusCode::INTERNAL
                                                         : grpc::StatusCode::FAILED_PRECONDITION;
    return {code,
            fmt::format("OCI runtime exec failed: {}", std::string(spawned.status().message()))};
  }
  const pid_t pid = *spawned;
  io.CloseChildEnds();  // the child's ends belong to it now
  Log().info("exec in {}/{} [{}]: {}", start.namespace_(), start.pod(), start.container(), argv[0]);
  // An empty first message: the command runs (errors before it come as the call's status).
  stream->Write(ExecOutput());

  InputPump input(stream, &io);
  const bool cancelled = !CopyOutput(ctx, stream, io);
  FinishCommand(pid, cancelled, stream);
  // The client half-closes once it has the exit code; one that does not is cut off.
  if (!input.AwaitHangUp(absl::Seconds(2))) ctx->TryCancel();
  input.Join();
  return cancelled ? grpc::Status(grpc::StatusCode::CANCELLED, "the caller went away")
                   : grpc::Status::OK;
}

}  // namespace mkube::agent::server
