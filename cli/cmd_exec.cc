// logs and exec: streams through the apiserver to the pod's node agent.
#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <iostream>
#include <mutex>
#include <thread>

#include "absl/strings/str_join.h"
#include "api/labels.h"
#include "api/object.h"
#include "base/status.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "fmt/format.h"
#include "proto/api/core.pb.h"
#include "proto/grpc_status.h"

namespace mkube::cli {
namespace {

// The container to use: the one named, or the pod's first (saying so when it has several, as
// kubectl does).
absl::StatusOr<std::string> PickContainer(const api::Pod& pod, const std::string& container) {
  if (!container.empty() || pod.spec().containers_size() == 0) return container;
  if (pod.spec().containers_size() > 1) {
    std::vector<std::string> names;
    for (const auto& c : pod.spec().containers()) names.push_back(c.name());
    std::cerr << fmt::format("Defaulted container \"{}\" out of: {}\n", names[0],
                             absl::StrJoin(names, ", "));
  }
  return pod.spec().containers(0).name();
}

// The pods a controller selects, from its spec.selector (a LabelSelector, or a map for a
// ReplicationController).
absl::StatusOr<std::string> SelectorOf(const google::protobuf::Message& obj) {
  const auto* spec_field = obj.GetDescriptor()->FindFieldByName("spec");
  if (!spec_field || spec_field->type() != google::protobuf::FieldDescriptor::TYPE_MESSAGE) {
    return absl::InvalidArgumentError("no spec");
  }
  const auto& spec = obj.GetReflection()->GetMessage(obj, spec_field);
  const auto* sel_field = spec.GetDescriptor()->FindFieldByName("selector");
  if (!sel_field) return absl::InvalidArgumentError("no selector");
  if (sel_field->is_map()) {
    std::vector<std::string> parts;
    const auto* r = spec.GetReflection();
    for (int i = 0; i < r->FieldSize(spec, sel_field); ++i) {
      const auto& entry = r->GetRepeatedMessage(spec, sel_field, i);
      const auto* e = entry.GetDescriptor();
      parts.push_back(entry.GetReflection()->GetString(entry, e->FindFieldByName("key")) + "=" +
                      entry.GetReflection()->GetString(entry, e->FindFieldByName("value")));
    }
    std::sort(parts.begin(), parts.end());
    return absl::StrJoin(parts, ",");
  }
  const auto& msg = spec.GetReflection()->GetMessage(spec, sel_field);
  const auto* selector = dynamic_cast<const api::LabelSelector*>(&msg);
  if (!selector) return absl::InvalidArgumentError("no label selector");
  MKUBE_ASSIGN_OR_RETURN(auto parsed, api::Selector::FromLabelSelector(*selector));
  return parsed.String();
}

}  // namespace

// The pod a logs or exec argument names: "NAME", "pod/NAME", or a controller's
// "TYPE/NAME" (deployment, replicaset, daemonset, job, replicationcontroller), for which one of
// its pods is picked as kubectl does — a running and ready one first.
absl::StatusOr<api::Pod> ResolvePod(Session& s, const std::string& arg) {
  MKUBE_ASSIGN_OR_RETURN(const api::KindInfo* pods, KindNamed("pods"));
  const auto slash = arg.find('/');
  const api::KindInfo* kind = pods;
  std::string name = arg;
  if (slash != std::string::npos) {
    MKUBE_ASSIGN_OR_RETURN(kind, KindNamed(arg.substr(0, slash)));
    name = arg.substr(slash + 1);
  }
  if (kind == pods) {
    MKUBE_ASSIGN_OR_RETURN(MessagePtr obj, s.Worded(s.res().Get(*pods, s.ns(), name)));
    return static_cast<const api::Pod&>(*obj);
  }
  MKUBE_ASSIGN_OR_RETURN(MessagePtr owner, s.Worded(s.res().Get(*kind, s.ns(), name)));
  auto selector = SelectorOf(*owner);
  if (!selector.ok() || selector->empty()) {
    return UserError(fmt::format("error: cannot select the pods of {}/{}", kind->singular, name));
  }
  MKUBE_ASSIGN_OR_RETURN(auto list, s.Worded(s.res().List(*pods, s.ns(), *selector, "")));
  if (list.items.empty()) {
    return UserError(fmt::format("error: {}/{} has no pods", kind->singular, name));
  }
  auto rank = [](const api::Pod& p) {
    bool ready = false;
    for (const auto& c : p.status().conditions()) ready |= c.type() == "Ready" && c.status() == "True";
    return (p.status().phase() == "Running" ? 0 : 2) + (ready ? 0 : 1);
  };
  std::vector<const api::Pod*> candidates;
  for (const auto& item : list.items) candidates.push_back(static_cast<const api::Pod*>(item.get()));
  std::stable_sort(candidates.begin(), candidates.end(), [&](const auto* a, const auto* b) {
    return rank(*a) < rank(*b);
  });
  if (candidates.size() > 1) {
    std::cerr << fmt::format("Found {} pods, using pod/{}\n", candidates.size(),
                             candidates[0]->metadata().name());
  }
  return *candidates[0];
}

namespace {

// The terminal in raw mode for as long as this lives.
class RawTerminal {
 public:
  explicit RawTerminal(int fd) : fd_(fd) {
    if (tcgetattr(fd_, &saved_) != 0) return;
    termios raw = saved_;
    cfmakeraw(&raw);
    active_ = tcsetattr(fd_, TCSANOW, &raw) == 0;
  }
  ~RawTerminal() {
    if (active_) tcsetattr(fd_, TCSANOW, &saved_);
  }

 private:
  int fd_;
  termios saved_{};
  bool active_ = false;
};

}  // namespace

namespace {

// Streams one container's log to stdout; with --prefix, each line starts with the pod and
// container. `out_mu` keeps the lines of pods followed together whole.
absl::Status StreamLog(Session& s, const api::Pod& pod, const std::string& container,
                       const LogsFlags& f, int64_t tail, std::mutex* out_mu) {
  agent::LogRequest req;
  req.set_namespace_(pod.metadata().namespace_());
  req.set_pod(pod.metadata().name());
  req.set_container(container);
  req.set_follow(f.follow);
  req.set_previous(f.previous);
  if (tail >= 0) req.set_tail_lines(tail);
  req.set_timestamps(f.timestamps);
  if (f.limit_bytes >= 0) req.set_limit_bytes(f.limit_bytes);
  if (!f.since.empty()) {
    MKUBE_ASSIGN_OR_RETURN(auto since, ParseDuration(f.since, "--since"));
    req.set_since_seconds(since.count());
  }
  if (!f.since_time.empty()) {
    auto t = api::ParseRfc3339(f.since_time);
    if (!t) {
      return UserError(fmt::format("error: --since-time: \"{}\" is not an RFC 3339 time", f.since_time));
    }
    req.set_since_unix_nanos(absl::ToUnixNanos(*t));
  }
  const std::string prefix =
      f.prefix ? fmt::format("[pod/{}/{}] ", pod.metadata().name(), container) : "";
  grpc::ClientContext ctx;
  auto reader = s.res().client()->Logs(&ctx, req);
  agent::LogChunk chunk;
  std::string partial;  // a line not ended yet
  auto emit = [&](const std::string& text) {
    std::lock_guard<std::mutex> lock(*out_mu);
    std::cout << text;
    std::cout.flush();
  };
  while (reader->Read(&chunk)) {
    if (prefix.empty() && (!f.follow || f.selector.empty())) {  // nothing else writes meanwhile
      std::cout.write(chunk.data().data(), static_cast<std::streamsize>(chunk.data().size()));
      std::cout.flush();
      continue;
    }
    partial += chunk.data();
    std::string lines;
    size_t from = 0;
    for (size_t nl; (nl = partial.find('\n', from)) != std::string::npos; from = nl + 1) {
      lines += prefix + partial.substr(from, nl + 1 - from);
    }
    partial.erase(0, from);
    if (!lines.empty()) emit(lines);
  }
  if (!partial.empty()) emit(prefix + partial + "\n");
  return s.Worded(FromGrpc(reader->Finish()));
}

// The first message of an exec stream: what to run where, and the terminal's size with a TTY.
agent::ExecInput ExecStart(const std::string& ns, const std::string& pod,
                           const std::string& container, const std::vector<std::string>& command,
                           bool with_stdin, bool tty) {
  agent::ExecInput first;
  auto* start = first.mutable_start();
  start->set_namespace_(ns);
  start->set_pod(pod);
  start->set_container(container);
  for (const auto& c : command) start->add_command(c);
  start->set_stdin(with_stdin);
  start->set_tty(tty);
  winsize ws{};
  if (tty && ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0) {
    start->mutable_size()->set_rows(ws.ws_row);
    start->mutable_size()->set_cols(ws.ws_col);
  }
  return first;
}

using ExecStream = grpc::ClientReaderWriter<agent::ExecInput, agent::ExecOutput>;

// Sends stdin to the stream until it ends (then says so), a write fails, or `stop`.
void ForwardStdin(ExecStream* stream, const std::atomic<bool>& stop) {
  char buf[16 * 1024];
  while (!stop) {
    pollfd p{STDIN_FILENO, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
    agent::ExecInput in;
    if (n <= 0) {
      in.set_stdin_closed(true);
      stream->Write(in);
      return;
    }
    in.set_stdin(buf, static_cast<size_t>(n));
    if (!stream->Write(in)) return;
  }
}

// Writes what the command printed to our stdout and stderr.
void CopyExecOutput(const agent::ExecOutput& out) {
  if (!out.stdout().empty()) {
    std::cout.write(out.stdout().data(), static_cast<std::streamsize>(out.stdout().size()));
    std::cout.flush();
  }
  if (!out.stderr().empty()) {
    std::cerr.write(out.stderr().data(), static_cast<std::streamsize>(out.stderr().size()));
    std::cerr.flush();
  }
}

// What exec returns once the stream is over: the stream's error when the command gave no exit
// code, else the command's exit code.
absl::Status ExecResult(Session& s, const grpc::Status& st, std::optional<int> exit_code) {
  if (!st.ok() && !exit_code) {
    absl::Status err = FromGrpc(st);
    if (err.code() == absl::StatusCode::kFailedPrecondition &&
        absl::string_view(err.message()).find("container not found") != absl::string_view::npos) {
      return UserError("error: unable to upgrade connection: " + std::string(err.message()));
    }
    return s.Worded(err);
  }
  if (exit_code.value_or(0) != 0) {
    return ExitWith(*exit_code, fmt::format("command terminated with exit code {}", *exit_code));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Logs(Session& s, const std::string& pod_arg, const LogsFlags& f) {
  if (!f.since.empty() && !f.since_time.empty()) {
    return UserError("error: at most one of `sinceTime` or `sinceSeconds` may be specified");
  }
  if (!f.selector.empty() && !pod_arg.empty()) {
    return UserError("error: only a selector (-l) or a POD name is allowed");
  }
  if (f.selector.empty()) {
    if (pod_arg.empty()) {
      return UserError(
          "error: expected 'logs [-f] [-p] (POD | TYPE/NAME) [-c CONTAINER]'.\n"
          "POD or TYPE/NAME is a required argument for the logs command");
    }
    MKUBE_ASSIGN_OR_RETURN(api::Pod pod, ResolvePod(s, pod_arg));
    MKUBE_ASSIGN_OR_RETURN(std::string container, PickContainer(pod, f.container));
    std::mutex out_mu;
    return StreamLog(s, pod, container, f, f.tail, &out_mu);
  }
  // By selector: every matching pod, the last 10 lines each unless --tail says otherwise (as
  // kubectl), followed together with -f.
  MKUBE_ASSIGN_OR_RETURN(const api::KindInfo* kind, KindNamed("pods"));
  MKUBE_ASSIGN_OR_RETURN(auto list, s.Worded(s.res().List(*kind, s.ns(), f.selector, "")));
  if (list.items.empty()) {
    NoResources(s, *kind, false);
    return absl::OkStatus();
  }
  const int64_t tail = f.tail >= 0 ? f.tail : 10;
  std::mutex out_mu;
  std::vector<std::pair<api::Pod, std::string>> targets;
  for (const auto& item : list.items) {
    const auto& pod = static_cast<const api::Pod&>(*item);
    MKUBE_ASSIGN_OR_RETURN(std::string container, PickContainer(pod, f.container));
    targets.emplace_back(pod, container);
  }
  if (!f.follow) {
    for (const auto& [pod, container] : targets) {
      MKUBE_RETURN_IF_ERROR(StreamLog(s, pod, container, f, tail, &out_mu));
    }
    return absl::OkStatus();
  }
  constexpr size_t kMaxFollowed = 5;  // kubectl's --max-log-requests default
  if (targets.size() > kMaxFollowed) {
    return UserError(fmt::format(
        "error: you are attempting to follow {} log streams, but maximum allowed concurrency is "
        "{}, use --max-log-requests to increase the limit",
        targets.size(), kMaxFollowed));
  }
  std::vector<absl::Status> results(targets.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < targets.size(); ++i) {
    threads.emplace_back([&, i] {
      results[i] = StreamLog(s, targets[i].first, targets[i].second, f, tail, &out_mu);
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& r : results) MKUBE_RETURN_IF_ERROR(r);
  return absl::OkStatus();
}

absl::Status Exec(Session& s, const std::string& pod_arg, const std::vector<std::string>& command,
                  const ExecFlags& f) {
  if (command.empty()) {
    return UserError("error: you must specify at least one command for the container");
  }
  MKUBE_ASSIGN_OR_RETURN(api::Pod pod, ResolvePod(s, pod_arg));
  const std::string& name = pod.metadata().name();
  const std::string& phase = pod.status().phase();
  if (phase == "Succeeded" || phase == "Failed") {
    return UserError(fmt::format(
        "error: cannot exec into a container in a completed pod; current phase is {}", phase));
  }
  MKUBE_ASSIGN_OR_RETURN(std::string container, PickContainer(pod, f.container));
  bool tty = f.tty;
  if (tty && (!f.stdin || !isatty(STDIN_FILENO))) {
    std::cerr << "Unable to use a TTY - input is not a terminal or the right kind of file\n";
    tty = false;
  }

  const agent::ExecInput first = ExecStart(s.ns(), name, container, command, f.stdin, tty);
  grpc::ClientContext ctx;
  auto stream = s.res().client()->Exec(&ctx);
  std::optional<RawTerminal> raw;
  if (tty) raw.emplace(STDIN_FILENO);
  std::atomic<bool> stop{false};
  std::thread input;
  if (stream->Write(first) && f.stdin) {
    input = std::thread([&] { ForwardStdin(stream.get(), stop); });
  }
  auto finish_input = [&] {
    stop = true;
    if (input.joinable()) input.join();
  };
  std::optional<int> exit_code;
  agent::ExecOutput out;
  while (stream->Read(&out)) {
    CopyExecOutput(out);
    if (out.has_exit_code()) {
      exit_code = out.exit_code();
      finish_input();
      stream->WritesDone();
    }
  }
  finish_input();
  grpc::Status st = stream->Finish();
  raw.reset();
  return ExecResult(s, st, exit_code);
}

}  // namespace mkube::cli
