// pods/log as a streamed text/plain answer, and pods/exec and pods/attach over WebSocket
// (v5.channel.k8s.io, v4 too): relayed to the pod's agent as mkubectl's are, each on threads
// of its own (Relays).
#include <condition_variable>
#include <deque>
#include <mutex>

#include "absl/strings/numbers.h"
#include "api/object.h"
#include "apiserver/rest/front.h"
#include "apiserver/rest/relays.h"
#include "apiserver/server/pod_streams.h"
#include "base/status.h"
#include "fmt/format.h"
#include "proto/agent/agent.grpc.pb.h"
#include "proto/grpc_status.h"

namespace mkube::apiserver::rest {
namespace {

// The channels of the remote command protocol: one byte before each message's bytes.
enum Channel : uint8_t { kStdin = 0, kStdout = 1, kStderr = 2, kError = 3, kResize = 4, kClose = 255 };

std::string OnChannel(Channel c, std::string_view data) {
  std::string m(1, static_cast<char>(c));
  m.append(data);
  return m;
}

// How the command ended, as the error channel says it (what kubectl turns into its exit code).
std::string ExitStatus(int code) {
  if (code == 0) return R"({"metadata":{},"status":"Success"})";
  Json s = {{"metadata", Json::object()},
            {"status", "Failure"},
            {"message", fmt::format("command terminated with non-zero exit code: exit status {}", code)},
            {"reason", "NonZeroExitCode"},
            {"details", {{"causes", {{{"reason", "ExitCode"}, {"message", std::to_string(code & 255)}}}}}}};
  return s.dump();
}

std::string FailureStatus(const absl::Status& st) {
  Json s = {{"metadata", Json::object()},
            {"status", "Failure"},
            {"message", std::string(st.message())},
            {"reason", Reason(st)},
            {"code", HttpCode(st)}};
  return s.dump();
}

// An integer query parameter of at least `min`, when given; an error naming it otherwise.
absl::Status IntParam(const Front::Call& c, const std::string& name, int64_t min,
                      std::optional<int64_t>* out) {
  const std::string v = c.Param(name);
  if (v.empty()) return absl::OkStatus();
  int64_t n = 0;
  if (!absl::SimpleAtoi(v, &n) || n < min) {
    return absl::InvalidArgumentError(
        fmt::format("{}: Invalid value: \"{}\": must be an integer of at least {}", name, v, min));
  }
  *out = n;
  return absl::OkStatus();
}

// The agent's request for a pods/log query.
absl::StatusOr<agent::LogRequest> LogRequestOf(const Front::Call& c) {
  agent::LogRequest r;
  r.set_namespace_(c.target.ns);
  r.set_pod(c.target.name);
  r.set_container(c.Param("container"));
  r.set_follow(c.Flag("follow"));
  r.set_previous(c.Flag("previous"));
  r.set_timestamps(c.Flag("timestamps"));
  std::optional<int64_t> tail, since, limit;
  MKUBE_RETURN_IF_ERROR(IntParam(c, "tailLines", 0, &tail));
  MKUBE_RETURN_IF_ERROR(IntParam(c, "sinceSeconds", 1, &since));
  MKUBE_RETURN_IF_ERROR(IntParam(c, "limitBytes", 1, &limit));
  if (tail) r.set_tail_lines(*tail);
  if (since) r.set_since_seconds(*since);
  if (limit) r.set_limit_bytes(*limit);
  if (const std::string t = c.Param("sinceTime"); !t.empty()) {
    if (since) {
      return absl::InvalidArgumentError("at most one of `sinceTime` or `sinceSeconds` may be specified");
    }
    auto when = api::ParseRfc3339(t);
    if (!when) {
      return absl::InvalidArgumentError(fmt::format("sinceTime: Invalid value: \"{}\": not an RFC 3339 time", t));
    }
    r.set_since_unix_nanos(absl::ToUnixNanos(*when));
  }
  return r;
}

}  // namespace

void Front::Logs(std::shared_ptr<Call> call) {
  Call& c = *call;
  auto req = LogRequestOf(c);
  if (!req.ok()) return Fail(c, req.status());
  auto target = pods_->Resolve(c.caller, "get", "log", c.target.ns, c.target.name, req->container());
  if (!target.ok()) return Answer(c, ResolveRefusal(target.status()));
  req->set_container(target->container);
  req->set_pod_uid(target->pod_uid);
  auto ctx = relays_->Open();
  if (!ctx) return Fail(c, absl::UnavailableError("the server is shutting down"));
  pods_->Authorize(ctx.get());
  c.ex->OnClose([ctx] { ctx->TryCancel(); });
  const bool spawned = relays_->Spawn([this, call, ctx, req = *req, target = *target] {
    auto stub = agent::Agent::NewStub(target.channel);
    auto reader = stub->Logs(ctx.get(), req);
    agent::LogChunk chunk;
    bool started = false;
    // The agent's first message (empty) says the log is there: the answer starts, and a
    // client that goes away from then on ends the call.
    while (reader->Read(&chunk)) {
      if (!started) call->ex->Start(200, "text/plain");
      started = true;
      if (!chunk.data().empty() && !call->ex->WriteWaiting(chunk.data())) {
        ctx->TryCancel();
        break;
      }
    }
    const absl::Status st = FromGrpc(server::FromAgent(reader->Finish(), target.node));
    if (started) {
      call->ex->End();
      Record(*call, 200);
    } else if (st.ok()) {
      Answer(*call, {.status = 200, .content_type = "text/plain"});
    } else {
      Fail(*call, st);
    }
  });
  if (!spawned) Fail(c, absl::UnavailableError("the server is shutting down"));
}

// One exec or attach over a WebSocket: what the client sends (stdin, resizes, the end of its
// input) queued for the agent's call on a thread of its own; what the command writes relayed
// back on this one.
class Front::RemoteCommand : public std::enable_shared_from_this<Front::RemoteCommand> {
 public:
  RemoteCommand(std::shared_ptr<grpc::ClientContext> ctx, bool v5) : ctx_(std::move(ctx)), v5_(v5) {}

  mkube::http::WebSocketHandlers Handlers() {
    auto self = shared_from_this();
    return {.on_message = [self](std::string m) { return self->FromClient(std::move(m)); },
            .on_close =
                [self] {
                  self->ctx_->TryCancel();
                  self->Finish();
                }};
  }

  // Runs the command through the agent: output to the client until it ends, then its status
  // and a normal close.
  void Exec(const std::shared_ptr<agent::Agent::Stub>& stub, agent::ExecInput first,
            const std::string& node) {
    auto stream = stub->Exec(ctx_.get());
    agent::ExecOutput out;
    if (!stream->Write(first) || !stream->Read(&out)) {
      return End(FromGrpc(server::FromAgent(stream->Finish(), node)), std::nullopt);
    }
    std::thread input([this, &stream] { Input(stream.get()); });
    std::optional<int> exit_code;
    while (stream->Read(&out)) {
      if (!out.stdout().empty()) ws_->Send(OnChannel(kStdout, out.stdout()));
      if (!out.stderr().empty()) ws_->Send(OnChannel(kStderr, out.stderr()));
      if (out.has_exit_code()) {
        exit_code = out.exit_code();
        Finish();  // the agent waits for the end of the input before it returns
      }
    }
    Finish();
    input.join();
    End(FromGrpc(server::FromAgent(stream->Finish(), node)), exit_code);
  }

  // Attach without input: the container's output from now on, until it ends.
  void Attach(const std::shared_ptr<agent::Agent::Stub>& stub, agent::LogRequest req,
              const std::string& node) {
    auto reader = stub->Logs(ctx_.get(), req);
    agent::LogChunk chunk;
    while (reader->Read(&chunk)) {
      if (!chunk.data().empty() && !ws_->Send(OnChannel(kStdout, chunk.data()))) break;
    }
    Finish();
    const absl::Status st = FromGrpc(server::FromAgent(reader->Finish(), node));
    End(st, st.ok() ? std::optional<int>(0) : std::nullopt);
  }

  void Opened(mkube::http::WebSocketPtr ws) { ws_ = std::move(ws); }

 private:
  static constexpr size_t kMaxQueued = 1 << 20;

  // A client message, on an I/O thread: queued for the agent; false (pause) while much waits.
  bool FromClient(std::string m) {
    if (m.empty()) return true;
    agent::ExecInput in;
    const auto channel = static_cast<uint8_t>(m[0]);
    if (channel == kStdin) {
      in.set_stdin(m.substr(1));
    } else if (channel == kClose && v5_ && m.size() == 2 && m[1] == kStdin) {
      in.set_stdin_closed(true);
    } else if (channel == kResize) {
      Json size = Json::parse(m.substr(1), nullptr, /*allow_exceptions=*/false);
      if (!size.is_object()) return true;
      in.mutable_resize()->set_cols(size.value("Width", 0u));
      in.mutable_resize()->set_rows(size.value("Height", 0u));
    } else {
      return true;
    }
    std::lock_guard<std::mutex> l(mu_);
    queued_bytes_ += in.stdin().size();
    queue_.push_back(std::move(in));
    cv_.notify_all();
    paused_ = queued_bytes_ > kMaxQueued;
    return !paused_;
  }

  // The client's input to the agent, until it ends or the command does; then the end of it.
  void Input(grpc::ClientReaderWriter<agent::ExecInput, agent::ExecOutput>* stream) {
    for (;;) {
      agent::ExecInput in;
      bool resume = false;
      {
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [this] { return done_ || !queue_.empty(); });
        if (queue_.empty()) {
          l.unlock();
          stream->WritesDone();
          return;
        }
        in = std::move(queue_.front());
        queue_.pop_front();
        queued_bytes_ -= in.stdin().size();
        if (paused_ && queued_bytes_ <= kMaxQueued / 2) {
          paused_ = false;
          resume = true;
        }
      }
      if (resume) ws_->Resume();
      if (!stream->Write(in)) return;
      if (in.stdin_closed()) {
        stream->WritesDone();
        return;
      }
    }
  }

  void Finish() {
    std::lock_guard<std::mutex> l(mu_);
    done_ = true;
    cv_.notify_all();
  }

  // The error channel's status (how the command ended, or why it could not run), then a
  // normal close: what tells the client it is over.
  void End(const absl::Status& st, std::optional<int> exit_code) {
    if (!st.ok()) {
      ws_->Send(OnChannel(kError, FailureStatus(st)));
    } else if (exit_code) {
      ws_->Send(OnChannel(kError, ExitStatus(*exit_code)));
    }
    ws_->Close();
  }

  std::shared_ptr<grpc::ClientContext> ctx_;
  const bool v5_;
  mkube::http::WebSocketPtr ws_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<agent::ExecInput> queue_;
  size_t queued_bytes_ = 0;
  bool paused_ = false, done_ = false;
};

void Front::RemoteCommandCall(std::shared_ptr<Call> call) {
  Call& c = *call;
  const Target& t = c.target;
  // What is wrong with the request is said first: a client whose WebSocket is refused tries
  // again the older way (SPDY), and should meet the same answer.
  const bool exec = t.subresource == "exec";
  std::vector<std::string> command;
  for (auto& [k, v] : mkube::http::ParseQuery(c.req.query)) {
    if (k == "command") command.push_back(v);
  }
  if (exec && command.empty()) {
    return Fail(c, absl::InvalidArgumentError("you must specify at least one command for the container"));
  }
  auto target = pods_->Resolve(c.caller, "create", t.subresource, t.ns, t.name, c.Param("container"));
  if (!target.ok()) return Answer(c, ResolveRefusal(target.status()));
  if (!exec && (c.Flag("stdin") || c.Flag("tty"))) {
    return Answer(c, Refusal(400, "BadRequest",
                             fmt::format("mkube-agent cannot attach to the standard input of "
                                         "container {}: attach shows its output; use exec for a "
                                         "command with input",
                                         target->container)));
  }
  if (!c.req.websocket) {
    return Answer(c, Refusal(400, "BadRequest", "Upgrade request required"));
  }
  const auto offered = c.req.Subprotocols();
  std::string protocol;
  for (const char* p : {"v5.channel.k8s.io", "v4.channel.k8s.io"}) {
    if (std::find(offered.begin(), offered.end(), p) != offered.end()) {
      protocol = p;
      break;
    }
  }
  if (protocol.empty()) {
    return Answer(c, Refusal(400, "BadRequest",
                             "the client offers no subprotocol this server speaks "
                             "(v5.channel.k8s.io, v4.channel.k8s.io)"));
  }
  auto ctx = relays_->Open();
  if (!ctx) return Fail(c, absl::UnavailableError("the server is shutting down"));
  pods_->Authorize(ctx.get());
  auto rc = std::make_shared<RemoteCommand>(ctx, protocol == "v5.channel.k8s.io");
  auto stub = std::shared_ptr<agent::Agent::Stub>(agent::Agent::NewStub(target->channel));
  std::function<void()> run;
  if (exec) {
    agent::ExecInput first;
    auto* start = first.mutable_start();
    start->set_namespace_(t.ns);
    start->set_pod(t.name);
    start->set_container(target->container);
    start->set_pod_uid(target->pod_uid);
    for (auto& word : command) start->add_command(word);
    start->set_stdin(c.Flag("stdin"));
    start->set_tty(c.Flag("tty"));
    run = [rc, stub, first, node = target->node] { rc->Exec(stub, first, node); };
  } else {
    agent::LogRequest req;
    req.set_namespace_(t.ns);
    req.set_pod(t.name);
    req.set_container(target->container);
    req.set_pod_uid(target->pod_uid);
    req.set_follow(true);
    req.set_tail_lines(0);
    run = [rc, stub, req, node = target->node] { rc->Attach(stub, req, node); };
  }
  Record(c, 101);
  c.ex->AcceptWebSocket(protocol, [this, rc, run](mkube::http::WebSocketPtr ws) {
    rc->Opened(ws);
    if (!relays_->Spawn(run)) ws->Close();
    return rc->Handlers();
  });
}

}  // namespace mkube::apiserver::rest
