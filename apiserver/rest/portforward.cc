// pods/portforward as kubectl 1.32 speaks it: a WebSocket (subprotocol
// SPDY/3.1+portforward.k8s.io) carrying SPDY/3.1. For each local connection the client opens
// an error stream and a data stream naming the pod's port (and a request id pairing them);
// each data stream becomes one agent PortForward call, relayed both ways on threads of its
// own. A failure is told as text on the error stream, as the kubelet tells it.
#include <condition_variable>
#include <deque>
#include <mutex>

#include "absl/strings/numbers.h"
#include "apiserver/rest/front.h"
#include "apiserver/rest/relays.h"
#include "apiserver/rest/spdy.h"
#include "apiserver/server/pod_streams.h"
#include "base/log.h"
#include "fmt/format.h"
#include "proto/agent/port_forward.grpc.pb.h"
#include "proto/grpc_status.h"

namespace mkube::apiserver::rest {
namespace {

constexpr char kProtocol[] = "SPDY/3.1+portforward.k8s.io";
constexpr size_t kMaxQueued = 1 << 20;  // bytes from the client waiting for an agent call

spdlog::logger& Log() {
  static spdlog::logger& l = log::Logger("portforward");
  return l;
}

using spdy::Frame;
using spdy::FrameType;
using spdy::Framer;

// One forwarded connection: its two streams and its agent call.
struct Pair {
  std::string key;  // its request id
  uint32_t error_stream = 0, data_stream = 0;
  int port = 0;
  std::shared_ptr<grpc::ClientContext> ctx;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::string> in;  // the client's bytes for the pod
  size_t queued = 0;
  bool in_fin = false;  // the client has no more
  bool done = false;    // the call has ended (or the tunnel)
};

}  // namespace

class Front::PortForwardTunnel : public std::enable_shared_from_this<Front::PortForwardTunnel> {
 public:
  PortForwardTunnel(Relays* relays, const server::PodTargets* pods,
                    server::PodTargets::Target target, std::string ns, std::string pod)
      : relays_(relays), pods_(pods), target_(std::move(target)), ns_(std::move(ns)),
        pod_(std::move(pod)) {}

  mkube::http::WebSocketHandlers Opened(mkube::http::WebSocketPtr ws) {
    ws_ = std::move(ws);
    auto self = shared_from_this();
    return {.on_message = [self](std::string m) { return self->FromClient(m); },
            .on_close = [self] { self->Closed(); }};
  }

 private:
  // The client's bytes, on an I/O thread. False pauses reading while a call is behind.
  bool FromClient(const std::string& bytes) {
    std::lock_guard<std::mutex> l(mu_);
    std::vector<Frame> frames;
    if (auto st = framer_.Feed(bytes, &frames); !st.ok()) {
      Log().warn("port forwarding to {}/{}: {}", ns_, pod_, std::string(st.message()));
      ws_->Push(Framer::GoAway(0, 1));
      ws_->Close();
      return false;
    }
    bool more = true;
    for (Frame& f : frames) {
      switch (f.type) {
        case FrameType::kSynStream: Opened(f); break;
        case FrameType::kData: more &= Data(f); break;
        case FrameType::kRstStream: Reset(f.stream); break;
        case FrameType::kPing: ws_->Push(Framer::Ping(f.stream)); break;
        case FrameType::kGoAway: ws_->Close(); break;
        case FrameType::kIgnored: break;
      }
    }
    return more;
  }

  // A stream the client opened: answered at once, and a data stream starts its call.
  void Opened(const Frame& f) {
    auto header = [&](const char* name) {
      auto it = f.headers.find(name);
      return it == f.headers.end() ? std::string() : it->second;
    };
    const std::string type = header("streamtype");
    int port = 0;
    if ((type != "error" && type != "data") || !absl::SimpleAtoi(header("port"), &port) ||
        port < 1 || port > 65535) {
      ws_->Push(Framer::RstStream(f.stream, spdy::kProtocolError));
      return;
    }
    ws_->Push(framer_.SynReply(f.stream));
    // Without a request id, the kubelet's rule pairs a data stream with the one before it.
    std::string key = header("requestid");
    if (key.empty()) key = std::to_string(type == "error" ? f.stream : f.stream - 2);
    auto& pair = pairs_[key];
    if (!pair) {
      pair = std::make_shared<Pair>();
      pair->key = key;
    }
    pair->port = port;
    by_stream_[f.stream] = pair;
    if (type == "error") {
      pair->error_stream = f.stream;
      return;
    }
    pair->data_stream = f.stream;
    pair->ctx = relays_->Open();
    if (!pair->ctx) {
      ws_->Push(Framer::RstStream(f.stream, spdy::kRefusedStream));
      return;
    }
    pods_->Authorize(pair->ctx.get());
    auto self = shared_from_this();
    if (!relays_->Spawn([self, pair] {
          self->Forward(pair);
          self->Forget(*pair);
        })) {
      ws_->Push(Framer::RstStream(f.stream, spdy::kRefusedStream));
    }
  }

  bool Data(const Frame& f) {
    auto it = by_stream_.find(f.stream);
    if (it == by_stream_.end() || it->second->data_stream != f.stream) return true;  // error stream
    Pair& p = *it->second;
    std::lock_guard<std::mutex> l(p.mu);
    if (!f.data.empty()) {
      p.queued += f.data.size();
      p.in.push_back(f.data);
    }
    p.in_fin |= f.fin();
    p.cv.notify_all();
    if (p.queued > kMaxQueued) {
      paused_ = &p;
      return false;
    }
    return true;
  }

  void Reset(uint32_t stream) {
    auto it = by_stream_.find(stream);
    if (it == by_stream_.end()) return;
    Pair& p = *it->second;
    if (p.ctx) p.ctx->TryCancel();
    std::lock_guard<std::mutex> l(p.mu);
    p.done = true;
    p.cv.notify_all();
  }

  void Closed() {
    std::lock_guard<std::mutex> l(mu_);
    for (auto& [key, p] : pairs_) {
      if (p->ctx) p->ctx->TryCancel();
      std::lock_guard<std::mutex> pl(p->mu);
      p->done = true;
      p->cv.notify_all();
    }
  }

  // One connection to the pod's port through its agent, until both sides have ended.
  void Forward(const std::shared_ptr<Pair>& pair) {
    auto stub = agent::PortForward::NewStub(target_.channel);
    auto stream = stub->Forward(pair->ctx.get());
    agent::PortForwardData first, out;
    auto* start = first.mutable_start();
    start->set_namespace_(ns_);
    start->set_pod(pod_);
    start->set_port(pair->port);
    start->set_pod_uid(target_.pod_uid);
    if (!stream->Write(first) || !stream->Read(&out)) return Failed(*pair, stream->Finish());
    std::thread input([this, pair, &stream] { Input(*pair, stream.get()); });
    bool fin_sent = false;
    while (stream->Read(&out)) {
      if (!out.data().empty() && !ws_->Send(Framer::Data(pair->data_stream, out.data(), false))) {
        pair->ctx->TryCancel();
        break;
      }
      if (out.closed() && !fin_sent) fin_sent = ws_->Send(Framer::Data(pair->data_stream, "", true));
    }
    {
      std::lock_guard<std::mutex> l(pair->mu);
      pair->done = true;
      pair->cv.notify_all();
    }
    input.join();
    const grpc::Status st = stream->Finish();
    if (!st.ok() && st.error_code() != grpc::StatusCode::CANCELLED) return Failed(*pair, st);
    if (!fin_sent) ws_->Send(Framer::Data(pair->data_stream, "", true));
    if (pair->error_stream) ws_->Send(Framer::Data(pair->error_stream, "", true));
  }

  // A connection that has ended leaves the tunnel (which may carry many in its life).
  void Forget(const Pair& p) {
    std::lock_guard<std::mutex> l(mu_);
    by_stream_.erase(p.error_stream);
    by_stream_.erase(p.data_stream);
    pairs_.erase(p.key);
    if (paused_ == &p) {
      paused_ = nullptr;
      ws_->Resume();
    }
  }

  // The client's bytes to the agent, then the end of them.
  void Input(Pair& p, grpc::ClientReaderWriter<agent::PortForwardData, agent::PortForwardData>* stream) {
    for (;;) {
      agent::PortForwardData d;
      bool resume = false;
      {
        std::unique_lock<std::mutex> l(p.mu);
        p.cv.wait(l, [&] { return p.done || p.in_fin || !p.in.empty(); });
        if (p.in.empty()) {
          if (p.in_fin && !p.done) stream->WritesDone();
          return;
        }
        d.set_data(std::move(p.in.front()));
        p.in.pop_front();
        p.queued -= d.data().size();
        resume = p.queued <= kMaxQueued / 2;
      }
      if (resume) ResumeIfPaused(&p);
      if (!stream->Write(d)) return;
    }
  }

  void ResumeIfPaused(Pair* p) {
    std::lock_guard<std::mutex> l(mu_);
    if (paused_ != p) return;
    paused_ = nullptr;
    ws_->Resume();
  }

  // Tells the client why, as the kubelet does, and resets the connection's streams.
  void Failed(const Pair& p, const grpc::Status& st) {
    // The agent's own words say which port and pod; a failure to reach it does not.
    const std::string text =
        st.error_code() == grpc::StatusCode::UNAVAILABLE
            ? fmt::format("error forwarding port {} to pod {}, uid {}: {}", p.port, pod_,
                          target_.pod_uid, server::FromAgent(st, target_.node).error_message())
            : st.error_message();
    if (p.error_stream) ws_->Send(Framer::Data(p.error_stream, text, true));
    ws_->Send(Framer::RstStream(p.data_stream, spdy::kCancel));
  }

  Relays* relays_;
  const server::PodTargets* pods_;
  const server::PodTargets::Target target_;
  const std::string ns_, pod_;
  mkube::http::WebSocketPtr ws_;
  std::mutex mu_;  // the framer (its compressor orders the frames that carry headers) and pairs
  Framer framer_;
  std::map<std::string, std::shared_ptr<Pair>> pairs_;     // by request id
  std::map<uint32_t, std::shared_ptr<Pair>> by_stream_;    // by either stream
  Pair* paused_ = nullptr;  // whose backlog paused reading
};

void Front::PortForward(std::shared_ptr<Call> call) {
  Call& c = *call;
  const Target& t = c.target;
  auto target = pods_->Resolve(c.caller, "create", "portforward", t.ns, t.name, "");
  if (!target.ok()) return Answer(c, ResolveRefusal(target.status()));
  if (!c.req.websocket) return Answer(c, Refusal(400, "BadRequest", "Upgrade request required"));
  const auto offered = c.req.Subprotocols();
  if (std::find(offered.begin(), offered.end(), kProtocol) == offered.end()) {
    return Answer(c, Refusal(400, "BadRequest",
                             fmt::format("the client offers no subprotocol this server speaks ({})",
                                         kProtocol)));
  }
  auto tunnel = std::make_shared<PortForwardTunnel>(relays_.get(), pods_, std::move(*target), t.ns,
                                                    t.name);
  Record(c, 101);
  c.ex->AcceptWebSocket(kProtocol, [tunnel](mkube::http::WebSocketPtr ws) {
    return tunnel->Opened(std::move(ws));
  });
}

}  // namespace mkube::apiserver::rest
