// The store's own gRPC transport, driven by real gRPC C++ channels (and, for bad input, a
// raw socket): unary and streaming calls, messages across many frames and flow-control
// windows, errors, cancellation, backpressure, many concurrent calls, shutdown.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "absl/functional/any_invocable.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/etcd/rpc.grpc.pb.h"
#include "store/rpc/connection.h"
#include "store/rpc/server.h"
#include "tests/util/eventually.h"
#include "tests/util/raw_h2.h"

namespace mkube::store::rpc {
namespace {

using etcdserverpb::PutRequest;
using etcdserverpb::PutResponse;
using etcdserverpb::RangeRequest;
using etcdserverpb::RangeResponse;
using etcdserverpb::WatchRequest;
using etcdserverpb::WatchResponse;
using mkube::testing::Eventually;
namespace h2 = mkube::testing::h2;

// Answers handed to another thread, as the store's writer thread does.
class Answerer {
 public:
  Answerer() : thread_([this] { Run(); }) {}
  ~Answerer() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void Later(absl::AnyInvocable<void()> fn) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      work_.push_back(std::move(fn));
    }
    cv_.notify_all();
  }

 private:
  void Run() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || !work_.empty(); });
      if (work_.empty()) return;
      auto fn = std::move(work_.front());
      work_.pop_front();
      lock.unlock();
      fn();
      lock.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<absl::AnyInvocable<void()>> work_;
  bool stop_ = false;
  std::thread thread_;
};

// A Watch handler that answers each request with `count` responses of `size` bytes each
// (count and size from the request's create key "count:size"), or echoes a cancel's id.
class FloodStream final : public StreamHandler {
 public:
  FloodStream(std::shared_ptr<ServerStream> stream, std::atomic<int>* closed,
              std::atomic<int>* drained)
      : stream_(std::move(stream)), closed_(closed) {
    stream_->OnDrained(64 << 10, [drained] { drained->fetch_add(1); });
  }
  void OnMessage(std::string_view message) override {
    WatchRequest req;
    ASSERT_TRUE(req.ParseFromArray(message.data(), static_cast<int>(message.size())));
    if (req.has_cancel_request()) {
      WatchResponse resp;
      resp.set_watch_id(req.cancel_request().watch_id());
      resp.set_canceled(true);
      stream_->Write(resp);
      return;
    }
    const std::string& key = req.create_request().key();
    const int count = std::stoi(key.substr(0, key.find(':')));
    const int size = std::stoi(key.substr(key.find(':') + 1));
    for (int i = 0; i < count; ++i) {
      WatchResponse resp;
      resp.set_watch_id(i);
      resp.set_cancel_reason(std::string(size, static_cast<char>('a' + i % 26)));
      stream_->Write(resp);
      if (stream_->queued_bytes() > (1 << 20)) stream_->ArmDrained();
    }
  }
  void OnHalfClose() override { stream_->Finish(absl::OkStatus()); }
  void OnClose() override { closed_->fetch_add(1); }

 private:
  std::shared_ptr<ServerStream> stream_;
  std::atomic<int>* closed_;
};

// Asks a FloodStream for `spec` ("count:size").
template <typename Stream>
bool AskFlood(Stream& stream, const std::string& spec) {
  WatchRequest req;
  req.mutable_create_request()->set_key(spec);
  return stream->Write(req);
}

// A hand-made HTTP/2 client on a plain socket, for what gRPC clients never do (such as not
// reading what they asked for).
class RawClient {
 public:
  struct Frame {
    uint8_t type;
    uint8_t flags;
    uint32_t stream;
    std::string payload;
  };
  explicit RawClient(const std::string& address)
      : fd_(h2::ConnectTcp(address)), connected_(fd_ >= 0) {}
  ~RawClient() {
    if (fd_ >= 0) close(fd_);
  }
  bool connected() const { return connected_; }

  // The preface and SETTINGS granting no stream window: the server may send no DATA at all,
  // as to a client that never reads.
  static std::string StartWithoutWindow() {
    return h2::Preface(std::string("\x00\x04\x00\x00\x00\x00", 6));  // INITIAL_WINDOW_SIZE 0
  }
  // A call; `compressed` as its message's flag.
  static std::string Call(uint32_t stream, std::string_view path,
                          const google::protobuf::MessageLite& request, bool end_stream,
                          std::string_view encoding = "", bool compressed = false,
                          std::string_view timeout = "") {
    std::string message = FrameMessage(request);
    message[0] = compressed ? 1 : 0;
    return h2::CallHeaders(stream, path, encoding, timeout) +
           h2::DataFrames(stream, message, end_stream);
  }

  // Sends without blocking for at most `limit`; the bytes sent.
  size_t SendFor(const std::string& bytes, std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    size_t sent = 0;
    while (sent < bytes.size() && std::chrono::steady_clock::now() < deadline) {
      const ssize_t n =
          send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        sent += n;
      } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        break;
      } else {
        pollfd p{fd_, POLLOUT, 0};
        poll(&p, 1, 10);
      }
    }
    return sent;
  }

  bool Send(const std::string& bytes) {
    return send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }

  // Reads frames until `done` holds for one of them or the server closes the connection;
  // false if neither happens within `limit`.
  template <typename Done>
  bool ReadUntil(Done done, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
      while (in_.size() >= 9) {
        const auto* h = reinterpret_cast<const uint8_t*>(in_.data());
        const size_t n = (size_t{h[0]} << 16) | (size_t{h[1]} << 8) | h[2];
        if (in_.size() < 9 + n) break;
        Frame f{h[3], h[4],
                ((uint32_t{h[5]} << 24) | (uint32_t{h[6]} << 16) | (uint32_t{h[7]} << 8) | h[8]) &
                    0x7fffffff,
                in_.substr(9, n)};
        in_.erase(0, 9 + n);
        frames_.push_back(f);
        if (done(frames_.back())) return true;
      }
      if (closed_) return true;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[16384];
      const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) {
        closed_ = true;  // the end, or a reset
      } else {
        in_.append(buf, n);
      }
    }
  }
  bool closed() const { return closed_; }
  const std::vector<Frame>& frames() const { return frames_; }

  // The fields of the server's header blocks on `stream`, once one ends it (its trailers).
  std::map<std::string, std::string> Trailers(uint32_t stream) {
    std::map<std::string, std::string> fields;
    ReadUntil([&](const Frame& f) {
      if (f.type != h2::kHeaders) return false;
      EXPECT_TRUE(decoder_.Decode(f.payload, [&](std::string_view name, std::string_view value) {
        if (f.stream == stream) fields[std::string(name)] = value;
      }));
      return f.stream == stream && (f.flags & h2::kEndStream);
    });
    return fields;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
  bool closed_ = false;
  std::string in_;
  std::vector<Frame> frames_;
  h2::HeaderDecoder decoder_;
};

class RpcServerTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(2); }
  // Calls still parked answer (INTERNAL) into the server's loops, which must still exist.
  void TearDown() override {
    std::lock_guard<std::mutex> lock(parked_mu_);
    parked_.clear();
  }

  // (Re)starts the server; `tweak` may change its options.
  void Start(int loops, const std::function<void(ServerOptions&)>& tweak = nullptr) {
    ServerOptions o;
    o.listen = "127.0.0.1:0";
    o.loops = loops;
    o.max_message_bytes = 2 << 20;
    if (tweak) tweak(o);
    server_.reset();
    server_ = std::make_unique<Server>(o);
    // Range answers at once on the loop: a value of `limit` bytes under the asked key.
    server_->AddUnary("/etcdserverpb.KV/Range", [this](std::string_view bytes, Responder r) {
      ranges_.fetch_add(1);
      RangeRequest req;
      if (!req.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
        return r.Fail(absl::InvalidArgumentError("bad request"));
      }
      if (req.key() == "fail") {
        return r.Fail(absl::FailedPreconditionError("100% wrong: caf\xc3\xa9\nnext line"));
      }
      if (req.key() == "drop") return;  // the Responder answers when destroyed
      RangeResponse resp;
      auto* kv = resp.add_kvs();
      kv->set_key(req.key());
      kv->set_value(std::string(req.limit(), 'v'));
      if (req.key() == "later") {  // from another thread
        return answerer_.Later([r = std::move(r), resp]() mutable { r.Reply(resp); });
      }
      r.Reply(resp);
    });
    // Put answers from another thread with the size of what it received.
    server_->AddUnary("/etcdserverpb.KV/Put", [this](std::string_view bytes, Responder r) {
      PutRequest req;
      if (!req.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
        return r.Fail(absl::InvalidArgumentError("bad request"));
      }
      puts_.fetch_add(1);
      const bool intact = req.value().find_first_not_of('x') == std::string::npos;
      const int64_t size = static_cast<int64_t>(req.value().size());
      answerer_.Later([r = std::move(r), size, intact]() mutable {
        PutResponse resp;
        resp.mutable_header()->set_revision(intact ? size : -1);
        r.Reply(resp);
      });
    });
    // DeleteRange is never answered until the test says so.
    server_->AddUnary("/etcdserverpb.KV/DeleteRange", [this](std::string_view, Responder r) {
      std::lock_guard<std::mutex> lock(parked_mu_);
      parked_.push_back(std::move(r));
    });
    // Compact tells whether the call was its loop's only work.
    server_->AddUnary("/etcdserverpb.KV/Compact", [](std::string_view, Responder r) {
      etcdserverpb::CompactionResponse resp;
      resp.mutable_header()->set_revision(r.quiet() ? 1 : 0);
      r.Reply(resp);
    });
    server_->AddStream("/etcdserverpb.Watch/Watch", [this](std::shared_ptr<ServerStream> s) {
      return std::make_unique<FloodStream>(std::move(s), &closed_, &drained_);
    });
    ASSERT_TRUE(server_->Start().ok());
    channel_ = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    kv_ = etcdserverpb::KV::NewStub(channel_);
    watch_ = etcdserverpb::Watch::NewStub(channel_);
  }

  grpc::Status Range(const std::string& key, int64_t size, RangeResponse* resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    RangeRequest req;
    req.set_key(key);
    req.set_limit(size);
    return kv_->Range(&ctx, req, resp);
  }

  grpc::Status Put(size_t size, PutResponse* resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    PutRequest req;
    req.set_key("k");
    req.set_value(std::string(size, 'x'));
    return kv_->Put(&ctx, req, resp);
  }

  Answerer answerer_;
  std::mutex parked_mu_;
  std::vector<Responder> parked_;
  std::atomic<int> closed_{0};
  std::atomic<int> drained_{0};
  std::atomic<int> puts_{0};
  std::atomic<int> ranges_{0};
  std::unique_ptr<Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<etcdserverpb::KV::Stub> kv_;
  std::unique_ptr<etcdserverpb::Watch::Stub> watch_;
};

TEST_F(RpcServerTest, UnaryCallsAnswerFromTheLoopAndFromOtherThreads) {
  RangeResponse range;
  ASSERT_TRUE(Range("a", 3, &range).ok());
  ASSERT_EQ(range.kvs_size(), 1);
  EXPECT_EQ(range.kvs(0).key(), "a");
  EXPECT_EQ(range.kvs(0).value(), "vvv");
  PutResponse put;
  ASSERT_TRUE(Put(10, &put).ok());
  EXPECT_EQ(put.header().revision(), 10);
}

TEST_F(RpcServerTest, ACallAloneInItsRoundIsQuiet) {
  // One call at a time: each is the only work of its loop's round.
  for (int i = 0; i < 20; ++i) {
    grpc::ClientContext ctx;
    etcdserverpb::CompactionResponse resp;
    ASSERT_TRUE(kv_->Compact(&ctx, etcdserverpb::CompactionRequest(), &resp).ok());
    EXPECT_EQ(resp.header().revision(), 1) << i;
  }
}

TEST_F(RpcServerTest, MessagesLargerThanFramesAndWindowsArriveWhole) {
  // Requests: a 1.5 MiB value is many DATA frames and more than gRPC's first window.
  for (size_t size : {size_t{0}, size_t{16384}, size_t{70000}, size_t{1536 << 10}}) {
    PutResponse put;
    grpc::Status st = Put(size, &put);
    ASSERT_TRUE(st.ok()) << size << ": " << st.error_message();
    EXPECT_EQ(put.header().revision(), static_cast<int64_t>(size));
  }
  // Responses: up to 3 MiB (a gRPC client takes 4 at most), beyond the client's first
  // stream and connection windows.
  for (int64_t size : {int64_t{16385}, int64_t{65536}, int64_t{3 << 20}}) {
    RangeResponse range;
    grpc::Status st = Range("big", size, &range);
    ASSERT_TRUE(st.ok()) << size << ": " << st.error_message();
    ASSERT_EQ(range.kvs(0).value().size(), static_cast<size_t>(size));
  }
}

TEST_F(RpcServerTest, ErrorsReachTheClientWithTheirCodeAndMessage) {
  RangeResponse range;
  grpc::Status st = Range("fail", 0, &range);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(st.error_message(), "100% wrong: caf\xc3\xa9\nnext line");

  st = Range("drop", 0, &range);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INTERNAL);

  // Over the message limit: refused, and the connection goes on serving.
  PutResponse put;
  st = Put(3 << 20, &put);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << st.error_message();
  ASSERT_TRUE(Put(5, &put).ok());

  // A method nobody registered.
  auto lease = etcdserverpb::Lease::NewStub(channel_);
  grpc::ClientContext ctx;
  etcdserverpb::LeaseGrantResponse granted;
  st = lease->LeaseGrant(&ctx, etcdserverpb::LeaseGrantRequest(), &granted);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_NE(st.error_message().find("LeaseGrant"), std::string::npos);
}

// As gRPC's own servers answer: a message flagged compressed without an encoding is the
// client's error (INTERNAL); an encoding the server cannot decode is UNIMPLEMENTED.
TEST_F(RpcServerTest, CompressedMessagesAreAnsweredAsGrpcServersDo) {
  RawClient raw(server_->address());
  ASSERT_TRUE(raw.connected());
  RangeRequest req;
  req.set_key("k");
  ASSERT_TRUE(
      raw.Send(h2::Preface() + RawClient::Call(1, "/etcdserverpb.KV/Range", req, true, "", true)));
  auto t = raw.Trailers(1);
  EXPECT_EQ(t["grpc-status"], "13");
  EXPECT_NE(t["grpc-message"].find("compressed flag"), std::string::npos) << t["grpc-message"];

  ASSERT_TRUE(raw.Send(RawClient::Call(3, "/etcdserverpb.KV/Range", req, true, "gzip", true)));
  t = raw.Trailers(3);
  EXPECT_EQ(t["grpc-status"], "12");
  EXPECT_NE(t["grpc-message"].find("gzip"), std::string::npos) << t["grpc-message"];

  // identity is no encoding at all.
  ASSERT_TRUE(raw.Send(RawClient::Call(5, "/etcdserverpb.KV/Range", req, true, "identity")));
  t = raw.Trailers(5);
  EXPECT_EQ(t["grpc-status"], "0");
}

TEST(GrpcTimeoutTest, ParsesEveryUnitAndRefusesTheRest) {
  using namespace std::chrono;
  EXPECT_EQ(ParseGrpcTimeout("2H"), hours(2));
  EXPECT_EQ(ParseGrpcTimeout("3M"), minutes(3));
  EXPECT_EQ(ParseGrpcTimeout("10S"), seconds(10));
  EXPECT_EQ(ParseGrpcTimeout("99999999m"), milliseconds(99999999));
  EXPECT_EQ(ParseGrpcTimeout("7u"), microseconds(7));
  EXPECT_EQ(ParseGrpcTimeout("0n"), nanoseconds(0));
  for (const char* bad : {"", "S", "10", "10s", "123456789S", "-1S", "1.5S", "1 S"}) {
    EXPECT_FALSE(ParseGrpcTimeout(bad).has_value()) << bad;
  }
}

// grpc-timeout: a call still open when it passes ends with DEADLINE_EXCEEDED (its answer, if
// it comes later, is dropped); a malformed one is refused.
TEST(StreamIdsTest, OnlyIdsSkippedBelowTheHighestAreRefused) {
  StreamIds ids;
  EXPECT_TRUE(ids.Use(1));
  EXPECT_TRUE(ids.Use(3));
  EXPECT_TRUE(ids.Use(9));
  EXPECT_FALSE(ids.Use(5)) << "skipped";
  EXPECT_FALSE(ids.Use(7)) << "skipped";
  EXPECT_TRUE(ids.Use(3)) << "used before: nghttp2's to judge";
  EXPECT_TRUE(ids.Use(9));
  // Only the latest gaps are kept.
  uint32_t id = 9;
  for (size_t i = 0; i < StreamIds::kMaxGaps; ++i) EXPECT_TRUE(ids.Use(id += 4));
  EXPECT_TRUE(ids.Use(5)) << "the oldest gap is forgotten";
  EXPECT_FALSE(ids.Use(11));
  EXPECT_FALSE(ids.Use(id - 2));
  EXPECT_TRUE(ids.Use(id));
}

TEST_F(RpcServerTest, ACallEndsWhenItsGrpcTimeoutPasses) {
  RawClient raw(server_->address());
  ASSERT_TRUE(raw.connected());
  etcdserverpb::DeleteRangeRequest req;
  req.set_key("k");
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(raw.Send(h2::Preface() + RawClient::Call(1, "/etcdserverpb.KV/DeleteRange", req, true,
                                                       "", false, "200m")));
  auto t = raw.Trailers(1);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(t["grpc-status"], "4");
  EXPECT_GE(took, std::chrono::milliseconds(200));
  {
    std::lock_guard<std::mutex> lock(parked_mu_);
    ASSERT_EQ(parked_.size(), 1u);
    etcdserverpb::DeleteRangeResponse late;
    parked_[0].Reply(late);  // too late: dropped
  }
  ASSERT_TRUE(
      raw.Send(RawClient::Call(3, "/etcdserverpb.KV/DeleteRange", req, true, "", false, "soon")));
  t = raw.Trailers(3);
  EXPECT_EQ(t["grpc-status"], "13");
  EXPECT_NE(t["grpc-message"].find("malformed grpc-timeout"), std::string::npos);
  // The connection goes on, and nothing arrived for stream 1 after its end.
  RangeRequest range;
  range.set_key("k");
  ASSERT_TRUE(raw.Send(RawClient::Call(5, "/etcdserverpb.KV/Range", range, true)));
  EXPECT_EQ(raw.Trailers(5)["grpc-status"], "0");
  size_t after_end = 0, ended = 0;
  for (const auto& f : raw.frames()) {
    if (f.stream != 1) continue;
    after_end += ended;
    ended += f.type == h2::kHeaders && (f.flags & h2::kEndStream);
  }
  EXPECT_EQ(ended, 1u);
  EXPECT_EQ(after_end, 0u);
}

// The streams a connection may open at once are advertised, and one more is refused.
TEST_F(RpcServerTest, StreamsPastTheLimitAreRefused) {
  Start(1, [](ServerOptions& o) { o.max_concurrent_streams = 4; });
  RawClient raw(server_->address());
  ASSERT_TRUE(raw.connected());
  etcdserverpb::DeleteRangeRequest req;  // never answered: the streams stay open
  std::string calls;
  for (uint32_t id = 1; id <= 9; id += 2) {
    calls += RawClient::Call(id, "/etcdserverpb.KV/DeleteRange", req, true);
  }
  ASSERT_TRUE(raw.Send(h2::Preface("", /*ack=*/false) + calls));
  ASSERT_TRUE(raw.ReadUntil([](const RawClient::Frame& f) { return f.type == 3; }));
  const auto& frames = raw.frames();
  ASSERT_FALSE(frames.empty());
  ASSERT_EQ(frames[0].type, h2::kSettings);
  const std::string max_streams("\x00\x03\x00\x00\x00\x04", 6);  // MAX_CONCURRENT_STREAMS 4
  EXPECT_NE(frames[0].payload.find(max_streams), std::string::npos);
  EXPECT_EQ(frames.back().stream, 9u);
  EXPECT_EQ(frames.back().payload, std::string("\x00\x00\x00\x07", 4));  // REFUSED_STREAM
  {
    std::lock_guard<std::mutex> lock(parked_mu_);
    EXPECT_EQ(parked_.size(), 4u);
  }
  // A client that has acknowledged the limit and goes past it loses its connection (GOAWAY
  // PROTOCOL_ERROR: nghttp2 treats the stream error as a connection error, RFC 9113 5.4.1).
  RawClient acked(server_->address());
  ASSERT_TRUE(acked.Send(h2::Preface() + calls));
  ASSERT_TRUE(acked.ReadUntil([](const RawClient::Frame& f) { return f.type == h2::kGoaway; }));
  EXPECT_EQ(static_cast<uint8_t>(acked.frames().back().payload[7]), 1);
}

// Request messages sent in part hold memory until their rest comes: past the connection's
// limit, the call that went over ends RESOURCE_EXHAUSTED; the others, and new calls, go on.
TEST_F(RpcServerTest, PartlyReceivedMessagesAreBounded) {
  Start(1, [](ServerOptions& o) { o.max_connection_partial_bytes = 256 << 10; });
  RawClient raw(server_->address());
  ASSERT_TRUE(raw.connected());
  ASSERT_TRUE(raw.Send(h2::Preface()));
  // Each call announces a 1 MiB message and sends 96 KiB of it.
  const std::string body = NewFrame(1 << 20).substr(0, 5) + std::string(96 << 10, 'x');
  auto start_call = [&](uint32_t id) {
    return raw.Send(h2::CallHeaders(id, "/etcdserverpb.KV/Put") + h2::DataFrames(id, body, false));
  };
  ASSERT_TRUE(start_call(1));
  ASSERT_TRUE(start_call(3));
  ASSERT_TRUE(start_call(5));  // 288 KiB waiting: over
  auto t = raw.Trailers(5);
  EXPECT_EQ(t["grpc-status"], "8");
  EXPECT_NE(t["grpc-message"].find("partly received"), std::string::npos) << t["grpc-message"];
  RangeRequest range;
  range.set_key("k");
  ASSERT_TRUE(raw.Send(RawClient::Call(7, "/etcdserverpb.KV/Range", range, true)));
  EXPECT_EQ(raw.Trailers(7)["grpc-status"], "0");
  for (const auto& f : raw.frames()) EXPECT_TRUE(f.stream != 1 && f.stream != 3) << f.stream;
}

// What RFC 9113 requires of a server, case by case, each on a connection of its own.
TEST_F(RpcServerTest, ProtocolViolationsGetTheAnswersTheRfcRequires) {
  const std::string start = h2::Preface();
  // A GOAWAY's error code, or -1 if the connection did not end with one.
  auto goaway = [&](const std::string& bytes) -> int64_t {
    RawClient raw(server_->address());
    EXPECT_TRUE(raw.Send(start + bytes));
    raw.ReadUntil([](const RawClient::Frame& f) { return f.type == h2::kGoaway; });
    if (raw.frames().empty() || raw.frames().back().type != h2::kGoaway) return -1;
    return static_cast<uint8_t>(raw.frames().back().payload[7]);
  };
  // The code of the RST_STREAM the server sends for stream 1, or else of the GOAWAY that ends
  // the connection (a stream error may be treated as a connection error, RFC 9113 5.4.1,
  // which nghttp2 does for some), or -1.
  auto reset = [&](const std::string& bytes) -> int64_t {
    RawClient raw(server_->address());
    EXPECT_TRUE(raw.Send(start + bytes));
    raw.ReadUntil([](const RawClient::Frame& f) {
      return (f.type == 3 && f.stream == 1) || f.type == h2::kGoaway;
    });
    for (const auto& f : raw.frames()) {
      if (f.type == 3 && f.stream == 1) return static_cast<uint8_t>(f.payload[3]);
      if (f.type == h2::kGoaway) return static_cast<uint8_t>(f.payload[7]);
    }
    return -1;
  };
  auto headers = [](std::vector<std::pair<std::string, std::string>> fields, bool end) {
    std::string block;
    for (const auto& [k, v] : fields) h2::AppendLiteral(k, v, &block);
    return h2::Frame(h2::kHeaders, h2::kEndHeaders | (end ? h2::kEndStream : 0), 1, block);
  };
  EXPECT_EQ(goaway(h2::Frame(h2::kSettings, 0x1, 0, std::string(6, '\0'))), 6)
      << "SETTINGS ACK with a payload: FRAME_SIZE_ERROR";
  EXPECT_EQ(goaway(h2::Frame(2, 0, 0, std::string(5, '\0'))), 1)
      << "PRIORITY on stream 0: PROTOCOL_ERROR";
  EXPECT_EQ(reset(h2::Frame(2, 0, 1, std::string(4, '\0'))), 6)
      << "PRIORITY of 4 bytes: FRAME_SIZE_ERROR on its stream";
  etcdserverpb::DeleteRangeRequest parked;  // never answered: the stream stays half-closed
  EXPECT_EQ(reset(RawClient::Call(1, "/etcdserverpb.KV/DeleteRange", parked, true) +
                  h2::Frame(h2::kData, 0, 1, "x")),
            5)
      << "DATA on a half-closed stream: STREAM_CLOSED";
  // A stream id below one the client has used can no longer open a stream (RFC 9113 5.1.1):
  // one it skipped is closed without having been opened.
  RangeRequest range;
  const std::string range1 = RawClient::Call(1, "/etcdserverpb.KV/Range", range, true);
  const std::string range3 = RawClient::Call(3, "/etcdserverpb.KV/Range", range, true);
  const std::string range7 = RawClient::Call(7, "/etcdserverpb.KV/Range", range, true);
  EXPECT_EQ(goaway(range3 + range1), 1) << "HEADERS on a skipped, lower stream id: PROTOCOL_ERROR";
  EXPECT_EQ(goaway(range1 + range7 + RawClient::Call(5, "/etcdserverpb.KV/Range", range, true)),
            1)
      << "the same, the skipped id between two used ones";
  const std::string block = h2::CallHeaders(1, "/etcdserverpb.KV/Range").substr(9);
  const std::string weighted1 = h2::Frame(h2::kHeaders, h2::kEndHeaders | h2::kEndStream | 0x20,
                                          1, std::string("\x00\x00\x00\x00\x0f", 5) + block);
  EXPECT_EQ(goaway(range3 + weighted1), 1) << "the same, the HEADERS with a priority";
  EXPECT_EQ(goaway(range1 + range3 + range1), 5)
      << "HEADERS again on a stream the client ended: STREAM_CLOSED";
  const std::pair<std::string, std::string> method{":method", "POST"}, scheme{":scheme", "http"},
      path{":path", "/etcdserverpb.KV/Range"}, grpc{"content-type", "application/grpc"};
  EXPECT_EQ(reset(headers({scheme, path, grpc}, true)), 1) << "no :method";
  EXPECT_EQ(reset(headers({method, path, grpc}, true)), 1) << "no :scheme";
  EXPECT_EQ(reset(headers({method, scheme, path, grpc, {"Content-Length", "0"}}, true)), 1)
      << "upper-case header name";
  EXPECT_EQ(reset(headers({method, scheme, grpc, path}, true)), 1)
      << "pseudo-header after a regular one";

  RawClient get(server_->address());
  ASSERT_TRUE(get.Send(
      start +
      headers({{":method", "GET"}, scheme, path, {":authority", "localhost"}, grpc}, true)));
  auto t = get.Trailers(1);
  EXPECT_EQ(t[":status"], "405");
  EXPECT_EQ(t["grpc-status"], "13");
  std::lock_guard<std::mutex> lock(parked_mu_);
  parked_.clear();
}

// A client that sends PINGs and reads nothing: once a thousand acks wait, the connection is
// closed instead of holding more; other clients go on.
TEST_F(RpcServerTest, APingFloodIsCut) {
  RawClient raw(server_->address());
  ASSERT_TRUE(raw.connected());
  std::string flood = h2::Preface();
  for (int i = 0; i < 400000; ++i) flood += h2::Frame(h2::kPing, 0, 0, "12345678");
  const size_t sent = raw.SendFor(flood, std::chrono::seconds(20));
  EXPECT_LT(sent, flood.size()) << "the server read the whole flood";
  EXPECT_TRUE(raw.ReadUntil([](const RawClient::Frame&) { return false; }));
  EXPECT_TRUE(raw.closed());
  RangeResponse range;
  EXPECT_TRUE(Range("fine", 1, &range).ok());
}

// A client that grants the server all the window it wants and reads nothing: once its unread
// answers pass a few MiB the server stops reading its requests (they wait in the kernel), and
// goes on when the client reads again.
TEST_F(RpcServerTest, AClientThatDoesNotReadIsNotRead) {
  RawClient raw(server_->address());
  ASSERT_TRUE(raw.connected());
  const std::string big_window("\x00\x04\x7f\xff\xff\xff", 6);  // INITIAL_WINDOW_SIZE 2^31-1
  std::string calls =
      h2::Preface(big_window) + h2::Frame(8, 0, 0, std::string("\x7f\xff\x00\x00", 4));
  // 600 calls of 100 KiB, each answered with its key: 60 MiB each way, more than the kernel's
  // buffers on both sides hold.
  RangeRequest req;
  req.set_key(std::string(100 << 10, 'k'));
  req.set_limit(1);
  for (uint32_t id = 1; id < 2 * 600; id += 2) {
    calls += RawClient::Call(id, "/etcdserverpb.KV/Range", req, true);
  }
  const size_t sent = raw.SendFor(calls, std::chrono::seconds(3));
  EXPECT_LT(sent, calls.size()) << "every request was read";
  const int answered = ranges_.load();
  EXPECT_LT(answered, 300) << "the server kept reading";
  EXPECT_FALSE(raw.closed());
  // Reading again lets the server read and answer more.
  raw.ReadUntil([&](const RawClient::Frame&) { return ranges_.load() > answered + 10; },
                std::chrono::seconds(20));
  EXPECT_GT(ranges_.load(), answered + 10);
}

// A client that grants no window and asks for 100 answers of 1 MiB: once kAnswersHighWater of
// them are made or coming (the calls in progress counted at the size of the connection's
// recent answers), its other calls wait to begin, whatever number of streams it may open,
// while the connection is still read; once it opens its windows, every call is answered.
// Answered on the loop, and from another thread.
TEST_F(RpcServerTest, CallsWaitWhileTheirConnectionsAnswersCannotBeSent) {
  for (const std::string key : {"now", "later"}) {
    SCOPED_TRACE(key);
    ranges_ = 0;
    RawClient raw(server_->address());
    ASSERT_TRUE(raw.connected());
    RangeRequest req;
    req.set_key(key);
    req.set_limit(1 << 20);
    // A first call, whose answer tells the connection what its answers are like.
    ASSERT_TRUE(raw.Send(RawClient::StartWithoutWindow() +
                         RawClient::Call(1, "/etcdserverpb.KV/Range", req, true)));
    ASSERT_TRUE(raw.ReadUntil([](const RawClient::Frame& f) { return f.type == h2::kHeaders; }));
    constexpr int kCalls = 100;
    std::string out;
    for (uint32_t i = 1; i < kCalls; ++i) {
      out += RawClient::Call(2 * i + 1, "/etcdserverpb.KV/Range", req, true);
    }
    ASSERT_TRUE(raw.Send(out));
    const int bound = static_cast<int>(kAnswersHighWater >> 20) + 2;
    EXPECT_TRUE(Eventually([&] { return ranges_.load() >= bound - 2; })) << ranges_.load();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_LE(ranges_.load(), bound);
    // Still read: a PING is answered.
    ASSERT_TRUE(raw.Send(h2::Frame(h2::kPing, 0, 0, "12345678")));
    ASSERT_TRUE(raw.ReadUntil([](const RawClient::Frame& f) { return f.type == h2::kPing; }));
    EXPECT_FALSE(raw.closed());
    for (const auto& f : raw.frames()) EXPECT_NE(f.type, h2::kData);

    // The windows open (INITIAL_WINDOW_SIZE 2^31-1, and the connection's): all is answered.
    ASSERT_TRUE(raw.Send(
        h2::Frame(h2::kSettings, 0, 0, std::string("\x00\x04\x7f\xff\xff\xff", 6)) +
        h2::Frame(8, 0, 0, std::string("\x7f\xff\x00\x00", 4))));
    size_t data = 0;
    int ended = 0;
    raw.ReadUntil(
        [&](const RawClient::Frame& f) {
          if (f.type == h2::kData) data += f.payload.size();
          if (f.type == h2::kHeaders && (f.flags & h2::kEndStream)) ++ended;
          return ended == kCalls;
        },
        std::chrono::seconds(30));
    EXPECT_EQ(ended, kCalls);
    EXPECT_GT(data, size_t{kCalls} << 20);
    EXPECT_EQ(ranges_.load(), kCalls);
    EXPECT_FALSE(raw.closed());
  }
}

TEST_F(RpcServerTest, AStreamCarriesManyMessagesInOrderUnderBackpressure) {
  grpc::ClientContext ctx;
  auto stream = watch_->Watch(&ctx);
  // 256 responses of 64 KiB: 16 MiB, far beyond every window; the stream's queue passes its
  // high mark while the client reads, and drains.
  ASSERT_TRUE(AskFlood(stream, "256:65536"));
  WatchResponse resp;
  for (int i = 0; i < 256; ++i) {
    ASSERT_TRUE(stream->Read(&resp)) << i;
    ASSERT_EQ(resp.watch_id(), i);
    ASSERT_EQ(resp.cancel_reason(), std::string(65536, static_cast<char>('a' + i % 26)));
  }
  EXPECT_TRUE(Eventually([&] { return drained_.load() > 0; }));
  // Then small messages both ways, then the client's half-close ends the call.
  for (int i = 0; i < 100; ++i) {
    WatchRequest cancel;
    cancel.mutable_cancel_request()->set_watch_id(1000 + i);
    ASSERT_TRUE(stream->Write(cancel));
    ASSERT_TRUE(stream->Read(&resp));
    EXPECT_EQ(resp.watch_id(), 1000 + i);
  }
  ASSERT_TRUE(stream->WritesDone());
  EXPECT_FALSE(stream->Read(&resp));
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_TRUE(Eventually([&] { return closed_.load() == 1; }));
}

TEST_F(RpcServerTest, ACancelledOrAbandonedCallClosesItsHandler) {
  {
    grpc::ClientContext ctx;
    auto stream = watch_->Watch(&ctx);
    ASSERT_TRUE(AskFlood(stream, "1:10"));
    WatchResponse resp;
    ASSERT_TRUE(stream->Read(&resp));
    ctx.TryCancel();
    EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  EXPECT_TRUE(Eventually([&] { return closed_.load() == 1; }));
  {
    // A client that never reads a flood, then goes away with its connection.
    auto channel = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    auto watch = etcdserverpb::Watch::NewStub(channel);
    grpc::ClientContext ctx;
    auto stream = watch->Watch(&ctx);
    ASSERT_TRUE(AskFlood(stream, "64:65536"));
    ctx.TryCancel();
    stream->Finish().IgnoreError();
  }
  EXPECT_TRUE(Eventually([&] { return closed_.load() == 2; }));
  RangeResponse range;
  EXPECT_TRUE(Range("still", 1, &range).ok());
}

TEST_F(RpcServerTest, ManyConcurrentCallsOverSeveralConnections) {
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int c = 0; c < 4; ++c) {
    grpc::ChannelArguments args;
    args.SetInt("mkube.test.channel", c);  // a connection per channel
    auto channel = grpc::CreateCustomChannel(server_->address(),
                                             grpc::InsecureChannelCredentials(), args);
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([channel, &ok, t] {
        auto kv = etcdserverpb::KV::NewStub(channel);
        for (int i = 0; i < 200; ++i) {
          grpc::ClientContext ctx;
          PutRequest req;
          req.set_key("k");
          req.set_value(std::string(t * 10 + i, 'x'));
          PutResponse resp;
          if (kv->Put(&ctx, req, &resp).ok() && resp.header().revision() == t * 10 + i) ++ok;
        }
      });
    }
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 4 * 8 * 200);
}

TEST_F(RpcServerTest, GarbageClosesOnlyItsOwnConnection) {
  // The GOAWAY code a connection ends with after `input`, or -1 if it ends without one.
  auto ends_with = [&](const std::string& input) -> int64_t {
    RawClient raw(server_->address());
    EXPECT_TRUE(raw.connected());
    EXPECT_TRUE(raw.Send(input));
    EXPECT_TRUE(raw.ReadUntil([](const RawClient::Frame&) { return false; }));
    EXPECT_TRUE(raw.closed());
    for (const auto& f : raw.frames()) {
      if (f.type == h2::kGoaway) return static_cast<uint8_t>(f.payload[7]);
    }
    return -1;
  };
  EXPECT_EQ(ends_with("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), -1);
  EXPECT_EQ(ends_with(h2::Preface() + std::string("\x01\x00\x00\x00\x00\x00\x00\x00\x00", 9)), 6)
      << "a frame longer than the frame size we allow: FRAME_SIZE_ERROR";
  EXPECT_EQ(ends_with(h2::Preface() + h2::Frame(h2::kHeaders, 0x5, 1, "\x80")), 9)
      << "HEADERS whose block is not HPACK (index 0): COMPRESSION_ERROR";
  EXPECT_EQ(ends_with(h2::Preface() + h2::Frame(h2::kData, 0, 7, "x")), 1)
      << "DATA on a stream never opened: PROTOCOL_ERROR";
  RangeResponse range;
  EXPECT_TRUE(Range("fine", 1, &range).ok());
}

// A client that asks and never reads: once the answers waiting for it pass the connection's
// limit, the server closes the connection (GOAWAY ENHANCE_YOUR_CALM) instead of holding more.
TEST_F(RpcServerTest, AConnectionThatLeavesItsAnswersUnreadIsClosed) {
  Start(1, [](ServerOptions& o) { o.max_connection_backlog_bytes = 256 << 10; });
  RawClient client(server_->address());
  ASSERT_TRUE(client.connected());
  std::string out = RawClient::StartWithoutWindow();
  // Sixteen answers of 64 KiB: 1 MiB, four times the limit, none of it sendable.
  for (uint32_t i = 0; i < 16; ++i) {
    RangeRequest req;
    req.set_key("k");
    req.set_limit(64 << 10);
    out += RawClient::Call(2 * i + 1, "/etcdserverpb.KV/Range", req, true);
  }
  ASSERT_TRUE(client.Send(out));
  ASSERT_TRUE(client.ReadUntil([](const RawClient::Frame&) { return false; }))
      << "the connection stayed open";
  EXPECT_TRUE(client.closed());
  bool calm = false;
  for (const auto& f : client.frames()) {
    if (f.type == h2::kGoaway && f.payload.size() >= 8) {
      calm = static_cast<uint8_t>(f.payload[7]) == 11;  // ENHANCE_YOUR_CALM
    }
  }
  EXPECT_TRUE(calm);
  // Other connections are served as before.
  channel_ = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
  kv_ = etcdserverpb::KV::NewStub(channel_);
  RangeResponse range;
  EXPECT_TRUE(Range("fine", 1, &range).ok());
}

// A stream whose handler queues more messages than max_stream_queued_messages while its
// client reads none is ended with RESOURCE_EXHAUSTED; its handler is closed, the connection
// goes on.
TEST_F(RpcServerTest, AStreamWhoseQueueIsFullIsEnded) {
  Start(1, [](ServerOptions& o) { o.max_stream_queued_messages = 16; });
  RawClient client(server_->address());
  ASSERT_TRUE(client.connected());
  WatchRequest flood;
  flood.mutable_create_request()->set_key("100:10");
  ASSERT_TRUE(client.Send(RawClient::StartWithoutWindow() +
                          RawClient::Call(1, "/etcdserverpb.Watch/Watch", flood, false)));
  auto t = client.Trailers(1);
  ASSERT_FALSE(client.closed());
  EXPECT_EQ(t["grpc-status"], "8") << "not ended with RESOURCE_EXHAUSTED";
  EXPECT_TRUE(Eventually([&] { return closed_.load() == 1; }));
  for (const auto& f : client.frames()) EXPECT_NE(f.type, h2::kData);
  // The connection still answers.
  ASSERT_TRUE(client.Send(h2::Frame(h2::kPing, 0, 0, "12345678")));
  EXPECT_TRUE(client.ReadUntil([](const RawClient::Frame& f) {
    return f.type == h2::kPing && (f.flags & 0x1) && f.payload == "12345678";
  }));
  EXPECT_FALSE(client.closed());
}

TEST_F(RpcServerTest, ShutdownLetsAnswersInFlightOut) {
  // The answerer is held until the server is shutting down with a put in flight; the answer
  // still reaches the client.
  std::promise<void> release;
  answerer_.Later([f = release.get_future()]() mutable { f.wait(); });
  std::thread caller([&] {
    PutResponse put;
    grpc::ClientContext ctx;
    PutRequest req;
    req.set_value("xx");
    EXPECT_TRUE(kv_->Put(&ctx, req, &put).ok());
    EXPECT_EQ(put.header().revision(), 2);
  });
  ASSERT_TRUE(Eventually([&] { return puts_.load() == 1; }));
  std::thread stopper([&] { server_->Shutdown(std::chrono::seconds(30)); });
  release.set_value();
  caller.join();
  stopper.join();
  // New calls are refused once it is down.
  RangeResponse range;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  RangeRequest req;
  EXPECT_FALSE(kv_->Range(&ctx, req, &range).ok());
}

}  // namespace
}  // namespace mkube::store::rpc
