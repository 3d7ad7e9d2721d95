// The gRPC front of the registry, on the in-memory storage: a request whose caller has
// given up while it waited for a worker is not carried out.
#include "apiserver/server/api_service.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "apiserver/cache/watch_cache.h"
#include "apiserver/registry/registry.h"
#include "proto/api/core.pb.h"
#include "tests/apiserver/registry_env.h"
#include "tests/util/eventually.h"

namespace mkube::apiserver::server {
namespace {

class ApiServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto env = mkube::testing::RegistryEnv::Start();
    ASSERT_TRUE(env.ok()) << env.status();
    env_ = std::move(*env);
    cache_ = env_->cache.get();
    auto authn = auth::TokenAuthenticator::FromText("t,admin,1,\"system:masters\"\n");
    ASSERT_TRUE(authn.ok());
    authn_ = std::make_unique<auth::TokenAuthenticator>(*authn);
  }

  void Serve(ServiceOptions options) {
    service_ = std::make_unique<ApiService>(env_->registry.get(), authn_.get(), options);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    service_->Register(&builder);
    server_ = builder.BuildAndStart();
    ASSERT_TRUE(server_ && port > 0);
    service_->StartWatches();
    stub_ = Api::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                             grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    service_.reset();
    env_.reset();
  }

  grpc::Status CreatePod(const std::string& name, std::chrono::milliseconds deadline) {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer t");
    ctx.set_deadline(std::chrono::system_clock::now() + deadline);
    api::Pod pod;
    pod.mutable_metadata()->set_name(name);
    auto* c = pod.mutable_spec()->add_containers();
    c->set_name("c");
    c->set_image("soscscs/myapp:v1");
    CreateRequest req;
    req.set_resource("pods");
    req.set_namespace_("default");
    req.set_object(pod.SerializeAsString());
    ObjectReply reply;
    return stub_->Create(&ctx, req, &reply);
  }
  // A Get or Delete of the pod `name` through `method`.
  template <typename Req>
  grpc::Status OnPod(grpc::Status (Api::Stub::*method)(grpc::ClientContext*, const Req&,
                                                       ObjectReply*),
                     const std::string& name, std::chrono::milliseconds deadline) {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer t");
    ctx.set_deadline(std::chrono::system_clock::now() + deadline);
    Req req;
    req.set_resource("pods");
    req.set_namespace_("default");
    req.set_name(name);
    ObjectReply reply;
    return (stub_.get()->*method)(&ctx, req, &reply);
  }
  grpc::Status DeletePod(const std::string& name, std::chrono::milliseconds deadline) {
    return OnPod(&Api::Stub::Delete, name, deadline);
  }
  grpc::StatusCode GetPod(const std::string& name,
                          std::chrono::milliseconds deadline = std::chrono::seconds(10)) {
    return OnPod(&Api::Stub::Get, name, deadline).error_code();
  }
  // A list waits for a worker (a get does not: it is answered where the store's answer
  // arrives).
  grpc::StatusCode ListPods(std::chrono::milliseconds deadline) {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer t");
    ctx.set_deadline(std::chrono::system_clock::now() + deadline);
    ListRequest req;
    req.set_resource("pods");
    req.set_namespace_("default");
    ListReply reply;
    return stub_->List(&ctx, req, &reply).error_code();
  }

  std::unique_ptr<mkube::testing::RegistryEnv> env_;
  cache::WatchCache* cache_ = nullptr;
  std::unique_ptr<auth::TokenAuthenticator> authn_;
  std::unique_ptr<ApiService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<Api::Stub> stub_;
};

TEST_F(ApiServiceTest, ARequestWhoseCallerGaveUpIsNotCarriedOut) {
  ServiceOptions options;
  options.workers = 1;  // one request at a time, so the next one waits
  Serve(options);
  ASSERT_TRUE(CreatePod("on-time", std::chrono::seconds(10)).ok());
  EXPECT_EQ(GetPod("on-time"), grpc::StatusCode::OK);
  // The only worker waits (up to 5 s) for a resourceVersion the cache has not seen.
  std::thread busy([&] {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer t");
    ListRequest req;
    req.set_resource("pods");
    req.set_resource_version("999999");
    ListReply reply;
    EXPECT_EQ(stub_->List(&ctx, req, &reply).error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  });
  // Once a quick list times out, the worker is taken (rather than sleeping and hoping so).
  bool taken = false;
  for (int i = 0; i < 100 && !taken; ++i) {
    taken = ListPods(std::chrono::milliseconds(100)) == grpc::StatusCode::DEADLINE_EXCEEDED;
  }
  ASSERT_TRUE(taken);
  // A get does not wait for the worker.
  EXPECT_EQ(GetPod("on-time", std::chrono::seconds(2)), grpc::StatusCode::OK);
  // Queued behind it, this delete's caller gives up after half a second.
  EXPECT_EQ(DeletePod("on-time", std::chrono::milliseconds(500)).error_code(),
            grpc::StatusCode::DEADLINE_EXCEEDED);
  // Creates do not wait for a worker: they go to the store without one.
  ASSERT_TRUE(CreatePod("meanwhile", std::chrono::seconds(10)).ok());
  busy.join();
  // The late delete must not have happened.
  EXPECT_EQ(GetPod("meanwhile"), grpc::StatusCode::OK);
  EXPECT_EQ(GetPod("on-time"), grpc::StatusCode::OK);
}

// The number in a line of the registry's text that starts with `prefix` (0 when none).
double Sample(const std::string& text, const std::string& prefix) {
  for (size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at + 1)) {
    if (at > 0 && text[at - 1] != '\n') continue;
    const size_t space = text.find(' ', at + prefix.size());
    return std::stod(text.substr(space + 1, text.find('\n', space) - space - 1));
  }
  return 0;
}

TEST_F(ApiServiceTest, RequestsAreCountedAsTheHttpApiCountsThem) {
  Serve({});
  const std::string created =
      R"(apiserver_request_total{verb="POST",dry_run="",group="",version="v1",resource="pods",)"
      R"(subresource="",scope="namespace",component="apiserver",code="201"})";
  const std::string missing =
      R"(apiserver_request_total{verb="GET",dry_run="",group="",version="v1",resource="pods",)"
      R"(subresource="",scope="resource",component="apiserver",code="404"})";
  const std::string text = metrics::Registry::Default().Render();
  const double created_before = Sample(text, created), missing_before = Sample(text, missing);
  ASSERT_TRUE(CreatePod("counted", std::chrono::seconds(10)).ok());
  EXPECT_EQ(GetPod("nonexistent"), grpc::StatusCode::NOT_FOUND);
  const std::string after = metrics::Registry::Default().Render();
  EXPECT_EQ(Sample(after, created), created_before + 1) << after;
  EXPECT_EQ(Sample(after, missing), missing_before + 1);
  EXPECT_NE(after.find(R"(apiserver_request_duration_seconds_count{verb="POST")"), std::string::npos);
}

TEST_F(ApiServiceTest, ARequestIsRefusedAtOnceWhenTooManyWaitForAWorker) {
  ServiceOptions options;
  options.workers = 1;
  options.max_waiting_requests = 1;
  Serve(options);
  ASSERT_TRUE(CreatePod("p", std::chrono::seconds(10)).ok());
  // The only worker waits (up to 5 s) for a resourceVersion the cache has not seen. (This
  // request, too, may find the one place taken, by a read below on its way to the worker.)
  std::thread busy([&] {
    grpc::StatusCode code;
    do {
      grpc::ClientContext ctx;
      ctx.AddMetadata("authorization", "Bearer t");
      ListRequest req;
      req.set_resource("pods");
      req.set_resource_version("999999");
      ListReply reply;
      code = stub_->List(&ctx, req, &reply).error_code();
    } while (code == grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_EQ(code, grpc::StatusCode::DEADLINE_EXCEEDED);
  });
  // Once the worker is taken, a quick list waits in the only place there is (its caller
  // gives up; it stays queued until the worker is free) and the next one is refused.
  grpc::Status refused;
  for (int i = 0; i < 100 && refused.error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED; ++i) {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer t");
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(100));
    ListRequest req;
    req.set_resource("pods");
    req.set_namespace_("default");
    ListReply reply;
    refused = stub_->List(&ctx, req, &reply);
  }
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(refused.error_message(), "Too many requests, please try again later.");
  busy.join();
  EXPECT_TRUE(mkube::testing::Eventually([&] { return GetPod("p") == grpc::StatusCode::OK; }))
      << "drained, the service serves again";
}

// The life of a watch call on the service's own completion queues: a refused one is never
// registered, a cancelled one is unregistered, and one still open when the server shuts
// down ends with the server (the service is then destroyed without waiting forever).
TEST_F(ApiServiceTest, WatchCallsAreRefusedCancelledAndEndedWithTheServer) {
  ServiceOptions options;
  options.watch_threads = 2;
  Serve(options);
  WatchRequest req;
  req.set_resource("pods");
  WatchBatch batch;
  {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer wrong");
    auto reader = stub_->Watch(&ctx, req);
    EXPECT_FALSE(reader->Read(&batch));
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
  EXPECT_EQ(cache_->watcher_count(), 0u);
  {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer t");
    auto reader = stub_->Watch(&ctx, req);
    ASSERT_TRUE(CreatePod("seen", std::chrono::seconds(10)).ok());
    ASSERT_TRUE(reader->Read(&batch));
    EXPECT_EQ(cache_->watcher_count(), 1u);
    ctx.TryCancel();
    while (reader->Read(&batch)) {
    }
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  EXPECT_TRUE(mkube::testing::Eventually([&] { return cache_->watcher_count() == 0; }));
  // Several watches left open across both lanes, then the server goes away under them.
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<grpc::ClientReader<WatchBatch>>> readers;
  for (int i = 0; i < 6; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    contexts.back()->AddMetadata("authorization", "Bearer t");
    readers.push_back(stub_->Watch(contexts.back().get(), req));
  }
  ASSERT_TRUE(CreatePod("also-seen", std::chrono::seconds(10)).ok());
  for (auto& r : readers) ASSERT_TRUE(r->Read(&batch));
  EXPECT_EQ(cache_->watcher_count(), 6u);
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  service_.reset();
  EXPECT_EQ(cache_->watcher_count(), 0u);
  for (auto& r : readers) {
    while (r->Read(&batch)) {
    }
    EXPECT_FALSE(r->Finish().ok());
  }
}

// Watch streams carry every event once, in order, however the writes are batched.
class WatchStreamTest : public ApiServiceTest,
                        public ::testing::WithParamInterface<std::chrono::milliseconds> {};

TEST_P(WatchStreamTest, EveryEventOnceInOrderInBatches) {
  ServiceOptions options;
  options.watch_coalesce = GetParam();
  Serve(options);
  ASSERT_TRUE(CreatePod("before", std::chrono::seconds(10)).ok());
  grpc::ClientContext ctx;
  ctx.AddMetadata("authorization", "Bearer t");
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  WatchRequest req;
  req.set_resource("pods");
  req.set_resource_version("0");  // the existing pod first, then what happens
  auto reader = stub_->Watch(&ctx, req);
  constexpr int kPods = 200;
  std::vector<std::string> names;
  int64_t last_rv = 0;
  WatchBatch batch;
  // The existing pod comes first, as the watch's initial state. Writes start only once it has
  // come: the initial state is sent in key order, not in revision order, so pods written before
  // the watch took its snapshot would come in that order too.
  ASSERT_TRUE(reader->Read(&batch));
  ASSERT_EQ(batch.events_size(), 1);
  ASSERT_EQ(batch.events(0).type(), "ADDED");
  last_rv = std::stoll(batch.events(0).resource_version());
  {
    api::Pod pod;
    ASSERT_TRUE(pod.ParseFromString(batch.events(0).object()));
    names.push_back(pod.metadata().name());
  }
  std::vector<std::thread> writers;
  for (int w = 0; w < 4; ++w) {
    writers.emplace_back([&, w] {
      for (int i = w; i < kPods; i += 4) {
        EXPECT_TRUE(CreatePod("p" + std::to_string(i), std::chrono::seconds(30)).ok());
      }
    });
  }
  while (names.size() < kPods + 1 && reader->Read(&batch)) {
    for (const auto& ev : batch.events()) {
      ASSERT_EQ(ev.type(), "ADDED");
      const int64_t rv = std::stoll(ev.resource_version());
      EXPECT_GT(rv, last_rv) << "in order";
      last_rv = rv;
      api::Pod pod;
      ASSERT_TRUE(pod.ParseFromString(ev.object()));
      names.push_back(pod.metadata().name());
    }
  }
  for (auto& t : writers) t.join();
  ctx.TryCancel();
  ASSERT_EQ(names.size(), static_cast<size_t>(kPods + 1));
  EXPECT_EQ(names[0], "before");
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::unique(names.begin(), names.end()), names.end()) << "no duplicates";
}

// A quiet watch does not wait for the coalescing interval: one event after another, each is
// sent at once (with a minute's interval, a wait would pass the read's deadline).
TEST_F(ApiServiceTest, AQuietWatchSendsEachEventAtOnce) {
  ServiceOptions options;
  options.watch_coalesce = std::chrono::minutes(1);
  Serve(options);
  grpc::ClientContext ctx;
  ctx.AddMetadata("authorization", "Bearer t");
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  WatchRequest req;
  req.set_resource("pods");
  req.set_resource_version("0");  // from the start: a create before the watch is in is seen
  auto reader = stub_->Watch(&ctx, req);
  WatchBatch batch;
  for (int i = 0; i < 5; ++i) {
    const std::string name = "one-by-one-" + std::to_string(i);
    ASSERT_TRUE(CreatePod(name, std::chrono::seconds(10)).ok());
    ASSERT_TRUE(reader->Read(&batch)) << "event " << i << " did not come before the deadline";
    ASSERT_EQ(batch.events_size(), 1);
    api::Pod pod;
    ASSERT_TRUE(pod.ParseFromString(batch.events(0).object()));
    EXPECT_EQ(pod.metadata().name(), name);
  }
  ctx.TryCancel();
}

INSTANTIATE_TEST_SUITE_P(Coalescing, WatchStreamTest,
                         ::testing::Values(std::chrono::milliseconds(0),
                                           std::chrono::milliseconds(10)),
                         [](const auto& info) {
                           return std::to_string(info.param.count()) + "ms";
                         });

}  // namespace
}  // namespace mkube::apiserver::server
