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
#include "agent/runtime/process.h"
#include "api/log.h"
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
  Fd fd(open(target->path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0 && !req->follow()) return grpc::Status::OK;  // it never wrote anything
  while (fd.get() < 0) {  // following a container that has not written yet
    if (ctx->IsCancelled() || !target->running()) return grpc::Status::OK;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    fd.Reset(open(target->path.c_str(), O_RDONLY | O_CLOEXEC));
  }
  int64_t offset = req->has_tail_lines() ? TailOffset(fd.get(), req->tail_lines()) : 0;
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
      chunk.set_data(buf.data(), static_cast<size_t>(n));
      if (!writer->Write(chunk)) return grpc::Status::OK;  // the caller went away
    }
    if (!was_running || ctx->IsCancelled()) return grpc::Status::OK;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

grpc::Status AgentService::Exec(grpc::ServerContext* ctx,
                                grpc::ServerReaderWriter<ExecOutput, ExecInput>* stream) {
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

  // Descriptors: with a terminal, one pty for everything; else pipes (stdin only if asked).
  Fd in_w, out_r, err_r, master;
  int child_in = -1, child_out = -1, child_err = -1;
  Fd slave_keep, in_r_keep, out_w_keep, err_w_keep, null_keep;
  if (start.tty()) {
    int m = -1, s = -1;
    winsize ws{};
    ws.ws_row = static_cast<unsigned short>(start.size().rows() ? start.size().rows() : 24);
    ws.ws_col = static_cast<unsigned short>(start.size().cols() ? start.size().cols() : 80);
    if (openpty(&m, &s, nullptr, nullptr, &ws) != 0) {
      return {grpc::StatusCode::INTERNAL, fmt::format("openpty: {}", std::strerror(errno))};
    }
    fcntl(m, F_SETFD, FD_CLOEXEC);
    fcntl(s, F_SETFD, FD_CLOEXEC);
    master.Reset(m);
    slave_keep.Reset(s);
    child_in = child_out = child_err = s;
  } else {
    int p[2];
    if (start.stdin()) {
      if (pipe2(p, O_CLOEXEC) != 0) return {grpc::StatusCode::INTERNAL, "pipe"};
      in_r_keep.Reset(p[0]);
      in_w.Reset(p[1]);
      child_in = p[0];
    } else {
      null_keep.Reset(open("/dev/null", O_RDONLY | O_CLOEXEC));
      child_in = null_keep.get();
    }
    if (pipe2(p, O_CLOEXEC) != 0) return {grpc::StatusCode::INTERNAL, "pipe"};
    out_r.Reset(p[0]);
    out_w_keep.Reset(p[1]);
    child_out = p[1];
    if (pipe2(p, O_CLOEXEC) != 0) return {grpc::StatusCode::INTERNAL, "pipe"};
    err_r.Reset(p[0]);
    err_w_keep.Reset(p[1]);
    child_err = p[1];
  }
  const bool tty = start.tty();
  char tty_name[64] = "";
  if (tty) ptsname_r(master.get(), tty_name, sizeof tty_name);
  auto spawned =
      runtime::SpawnInContainer(*target, argv, {child_in, child_out, child_err, tty, tty_name});
  if (!spawned.ok()) {
    // As a runtime reports it: the command could not be started at all.
    const auto code = absl::IsInternal(spawned.status()) ? grpc::StatusCode::INTERNAL
                                                         : grpc::StatusCode::FAILED_PRECONDITION;
    return {code,
            fmt::format("OCI runtime exec failed: {}", std::string(spawned.status().message()))};
  }
  const pid_t pid = *spawned;
  // The child's ends belong to it now.
  slave_keep.Reset();
  in_r_keep.Reset();
  out_w_keep.Reset();
  err_w_keep.Reset();
  null_keep.Reset();
  Log().info("exec in {}/{} [{}]: {}", start.namespace_(), start.pod(), start.container(), argv[0]);
  // An empty first message: the command runs (errors before it come as the call's status).
  stream->Write(ExecOutput());

  // Input: its own thread, so a quiet client does not hold up the output.
  // Locals cannot carry ABSL_GUARDED_BY: input_done is guarded by mu (set by the input thread,
  // awaited below).
  absl::Mutex mu;
  bool input_done = false;
  const int input_fd = tty ? master.get() : in_w.get();
  std::thread input([&] {
    ExecInput in;
    while (stream->Read(&in)) {
      if (in.has_resize() && tty) {
        winsize ws{};
        ws.ws_row = static_cast<unsigned short>(in.resize().rows());
        ws.ws_col = static_cast<unsigned short>(in.resize().cols());
        ioctl(master.get(), TIOCSWINSZ, &ws);
      }
      if (!in.stdin().empty() && input_fd >= 0) {
        const char* p = in.stdin().data();
        size_t left = in.stdin().size();
        while (left > 0) {
          const ssize_t n = write(input_fd, p, left);
          if (n < 0 && errno == EINTR) continue;
          if (n <= 0) break;
          p += n;
          left -= static_cast<size_t>(n);
        }
      }
      if (in.stdin_closed()) {
        if (tty) {
          const char eot = 4;  // ^D: end of input on a terminal
          (void)!write(master.get(), &eot, 1);
        } else {
          in_w.Reset();
        }
      }
    }
    absl::MutexLock lock(&mu);
    input_done = true;
  });

  // Output until the command's ends are closed.
  std::vector<std::pair<int, bool>> outs;  // fd, is stderr
  if (tty) {
    outs.push_back({master.get(), false});
  } else {
    outs.push_back({out_r.get(), false});
    outs.push_back({err_r.get(), true});
  }
  std::string buf(kChunk, '\0');
  bool cancelled = false;
  while (!outs.empty()) {
    std::vector<pollfd> pfds;
    for (auto [fd, err] : outs) pfds.push_back({fd, POLLIN, 0});
    const int r = poll(pfds.data(), pfds.size(), 200);
    if (ctx->IsCancelled()) {
      cancelled = true;
      break;
    }
    if (r <= 0) continue;
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
    if (cancelled) break;
  }
  int status = 0;
  if (cancelled) {
    kill(-pid, SIGKILL);
    waitpid(pid, &status, 0);
  } else {
    waitpid(pid, &status, 0);
    kill(-pid, SIGKILL);  // whatever it left running in its group
    ExecOutput last;
    last.set_exit_code(runtime::ExitFromWaitStatus(status).exit_code);
    stream->Write(last);
  }
  // The client half-closes once it has the exit code; one that does not is cut off.
  bool hung_up;
  {
    absl::MutexLock lock(&mu);
    hung_up = mu.AwaitWithTimeout(absl::Condition(&input_done), absl::Seconds(2));
  }
  if (!hung_up) ctx->TryCancel();
  input.join();
  return cancelled ? grpc::Status(grpc::StatusCode::CANCELLED, "the caller went away")
                   : grpc::Status::OK;
}

}  // namespace mkube::agent::server
