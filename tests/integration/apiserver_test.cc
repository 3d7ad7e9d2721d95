// The real mkube-apiserver on the real mkube-store: CRUD, conflicts, watches across an
// apiserver kill -9, too-old versions, slow watchers, authentication and authorization.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/numbers.h"
#include "api/codec.h"
#include "api/kinds.h"
#include "grpcpp/grpcpp.h"
#include "proto/api/apps.pb.h"
#include "proto/api/core.pb.h"
#include "proto/apiserver/apiserver.grpc.pb.h"
#include "tests/util/cluster.h"
#include "tests/util/etcd_client.h"
#include "tests/util/eventually.h"

namespace mkube::testing {
namespace {

using apiserver::Api;

class Client {
 public:
  Client(const std::string& address, std::string token) : token_(std::move(token)) {
    stub_ = Api::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  }
  void Auth(grpc::ClientContext* ctx) {
    if (!token_.empty()) ctx->AddMetadata("authorization", "Bearer " + token_);
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(15));
  }
  absl::StatusOr<api::Pod> CreatePod(const api::Pod& pod, const std::string& ns = "default") {
    auto bytes = Create("pods", pod, ns);
    if (!bytes.ok()) return bytes.status();
    api::Pod out;
    out.ParseFromString(*bytes);
    return out;
  }
  // Creates `obj` as a `resource`, or as the subresource of the object `name`; returns what the
  // server stored.
  absl::StatusOr<std::string> Create(const std::string& resource,
                                     const google::protobuf::Message& obj,
                                     const std::string& ns = "default", const std::string& name = "",
                                     const std::string& subresource = "") {
    grpc::ClientContext ctx;
    Auth(&ctx);
    apiserver::CreateRequest req;
    req.set_resource(resource);
    req.set_namespace_(ns);
    req.set_name(name);
    req.set_subresource(subresource);
    req.set_object(obj.SerializeAsString());
    apiserver::ObjectReply reply;
    if (auto st = stub_->Create(&ctx, req, &reply); !st.ok()) return FromGrpc(st);
    return reply.object();
  }
  template <typename T>
  absl::StatusOr<T> Out(const grpc::Status& st, const apiserver::ObjectReply& reply) {
    if (!st.ok()) return FromGrpc(st);
    T obj;
    obj.ParseFromString(reply.object());
    return obj;
  }
  absl::StatusOr<api::Pod> GetPod(const std::string& name) {
    grpc::ClientContext ctx;
    Auth(&ctx);
    apiserver::GetRequest req;
    req.set_resource("pods");
    req.set_namespace_("default");
    req.set_name(name);
    apiserver::ObjectReply reply;
    return Out<api::Pod>(stub_->Get(&ctx, req, &reply), reply);
  }
  absl::StatusOr<api::Pod> Update(const api::Pod& pod, const std::string& sub = "") {
    grpc::ClientContext ctx;
    Auth(&ctx);
    apiserver::UpdateRequest req;
    req.set_resource("pods");
    req.set_namespace_("default");
    req.set_subresource(sub);
    req.set_object(pod.SerializeAsString());
    apiserver::ObjectReply reply;
    return Out<api::Pod>(stub_->Update(&ctx, req, &reply), reply);
  }
  template <typename T>
  absl::StatusOr<T> Patch(const std::string& resource, const std::string& ns,
                          const std::string& name, const std::string& patch,
                          const std::string& sub = "") {
    grpc::ClientContext ctx;
    Auth(&ctx);
    apiserver::PatchRequest req;
    req.set_resource(resource);
    req.set_namespace_(ns);
    req.set_name(name);
    req.set_subresource(sub);
    req.set_merge_patch(patch);
    apiserver::ObjectReply reply;
    return Out<T>(stub_->Patch(&ctx, req, &reply), reply);
  }
  absl::Status Delete(const std::string& resource, const std::string& ns, const std::string& name,
                      std::optional<int64_t> grace = std::nullopt) {
    grpc::ClientContext ctx;
    Auth(&ctx);
    apiserver::DeleteRequest req;
    req.set_resource(resource);
    req.set_namespace_(ns);
    req.set_name(name);
    if (grace) req.set_grace_period_seconds(*grace);
    apiserver::ObjectReply reply;
    return FromGrpc(stub_->Delete(&ctx, req, &reply));
  }
  absl::StatusOr<apiserver::ListReply> List(const std::string& resource, const std::string& ns,
                                            const std::string& labels = "",
                                            const std::string& fields = "", int64_t limit = 0,
                                            const std::string& cont = "") {
    grpc::ClientContext ctx;
    Auth(&ctx);
    apiserver::ListRequest req;
    req.set_resource(resource);
    req.set_namespace_(ns);
    req.set_label_selector(labels);
    req.set_field_selector(fields);
    req.set_limit(limit);
    req.set_continue_(cont);
    apiserver::ListReply reply;
    auto st = stub_->List(&ctx, req, &reply);
    if (!st.ok()) return FromGrpc(st);
    return reply;
  }
  Api::Stub* stub() { return stub_.get(); }
  const std::string& token() const { return token_; }

 private:
  std::string token_;
  std::unique_ptr<Api::Stub> stub_;
};

api::Pod NewPod(const std::string& name, const std::string& node = "") {
  api::Pod p;
  p.mutable_metadata()->set_name(name);
  (*p.mutable_metadata()->mutable_labels())["app"] = "web";
  auto* c = p.mutable_spec()->add_containers();
  c->set_name("c");
  c->set_image("soscscs/myapp:v1");
  p.mutable_spec()->set_node_name(node);
  return p;
}

// Reads a watch stream on a thread, collecting events.
class Watcher {
 public:
  Watcher(Client& client, const std::string& rv, const std::string& fields = "",
          const std::string& labels = "") {
    client.Auth(&ctx_);
    ctx_.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    apiserver::WatchRequest req;
    req.set_resource("pods");
    req.set_namespace_("default");
    req.set_resource_version(rv);
    req.set_field_selector(fields);
    req.set_label_selector(labels);
    reader_ = client.stub()->Watch(&ctx_, req);
    thread_ = std::thread([this] {
      apiserver::WatchBatch batch;
      while (reader_->Read(&batch)) {
        std::lock_guard<std::mutex> lock(mu_);
        for (auto& ev : *batch.mutable_events()) events_.push_back(std::move(ev));
      }
      std::lock_guard<std::mutex> lock(mu_);
      status_ = reader_->Finish();
      done_ = true;
    });
  }
  ~Watcher() {
    ctx_.TryCancel();
    thread_.join();
  }
  // Waits (15 s at most) for n events or the end of the stream; returns what arrived.
  std::vector<apiserver::WatchEvent> Wait(size_t n) {
    WaitCount(n);
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  // Waits as Wait does and returns how many arrived, copying none (events may be large).
  size_t WaitCount(size_t n) {
    Eventually(
        [&] {
          std::lock_guard<std::mutex> lock(mu_);
          return events_.size() >= n || done_;
        },
        kWait);
    std::lock_guard<std::mutex> lock(mu_);
    return events_.size();
  }
  // How the stream ended, once it has (15 s at most).
  std::optional<grpc::Status> Ended() {
    if (!Eventually(
            [&] {
              std::lock_guard<std::mutex> lock(mu_);
              return done_;
            },
            kWait)) {
      return std::nullopt;
    }
    std::lock_guard<std::mutex> lock(mu_);
    return status_;
  }

 private:
  static constexpr std::chrono::seconds kWait{15};
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReader<apiserver::WatchBatch>> reader_;
  std::thread thread_;
  std::mutex mu_;
  std::vector<apiserver::WatchEvent> events_;
  grpc::Status status_;
  bool done_ = false;
};

std::string NameOf(const apiserver::WatchEvent& ev) {
  api::Pod p;
  p.ParseFromString(ev.object());
  return ev.type() + ":" + p.metadata().name();
}

// The same suite runs with the apiserver on mkube-store and on a real etcd 3.4.
class ApiServerTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    Cluster::Options o = Cluster::ApiserverOnly();
    o.store = GetParam() == "etcd" ? Cluster::Store::kEtcd : Cluster::Store::kMkube;
    auto st = cluster_.Start(o);
    ASSERT_TRUE(st.ok()) << st;
    admin_ = std::make_unique<Client>(address(), "admin-token");
  }
  // Kills the apiserver and starts another on the store; admin_ follows it.
  absl::Status RestartApiserver() {
    auto st = cluster_.RestartApiserver();
    if (st.ok()) admin_ = std::make_unique<Client>(address(), "admin-token");
    return st;
  }
  const std::string& address() { return cluster_.apiserver().address(); }
  const std::string& store_address() const { return cluster_.store_address(); }

  Cluster cluster_;
  std::unique_ptr<Client> admin_;
};

TEST_P(ApiServerTest, CrudWithDefaultsConflictsAndErrors) {
  auto created = admin_->CreatePod(NewPod("web-1"));
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_FALSE(created->metadata().uid().empty());
  EXPECT_FALSE(created->metadata().resource_version().empty());
  EXPECT_EQ(created->metadata().namespace_(), "default");
  EXPECT_EQ(created->spec().restart_policy(), "Always");
  EXPECT_EQ(created->spec().tolerations_size(), 2);

  auto again = admin_->CreatePod(NewPod("web-1"));
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(again.status().message(), "pods \"web-1\" already exists");
  auto bad = NewPod("bad");
  bad.mutable_spec()->mutable_containers(0)->clear_image();
  EXPECT_EQ(admin_->CreatePod(bad).status().message(),
            "Pod \"bad\" is invalid: spec.containers[0].image: Required value");
  EXPECT_EQ(admin_->CreatePod(NewPod("x"), "nowhere").status().message(),
            "namespaces \"nowhere\" not found");

  // Optimistic concurrency: an update from a stale version conflicts.
  auto v1 = *created;
  (*v1.mutable_metadata()->mutable_labels())["tier"] = "front";
  auto updated = admin_->Update(v1);
  ASSERT_TRUE(updated.ok()) << updated.status();
  EXPECT_EQ(admin_->Update(v1).status().code(), absl::StatusCode::kAborted);
  EXPECT_NE(std::string(admin_->Update(v1).status().message()).find("the object has been modified"),
            std::string::npos);
  EXPECT_EQ(updated->metadata().generation(), 1) << "labels are not the spec";

  auto patched = admin_->Patch<api::Pod>("pods", "default", "web-1",
                                         R"({"metadata":{"labels":{"tier":null,"env":"prod"}}})");
  ASSERT_TRUE(patched.ok()) << patched.status();
  EXPECT_EQ(patched->metadata().labels().count("tier"), 0u);
  EXPECT_EQ(patched->metadata().labels().at("env"), "prod");

  auto status = admin_->Patch<api::Pod>("pods", "default", "web-1",
                                        R"({"status":{"phase":"Running"}})", "status");
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->status().phase(), "Running");
  auto spec_via_status = admin_->Patch<api::Pod>("pods", "default", "web-1",
                                                 R"({"spec":{"nodeName":"sneaky"}})", "status");
  ASSERT_TRUE(spec_via_status.ok());
  EXPECT_EQ(spec_via_status->spec().node_name(), "") << "the status subresource changes status only";

  ASSERT_TRUE(admin_->CreatePod(NewPod("web-2")).ok());
  auto other = NewPod("db-1");
  (*other.mutable_metadata()->mutable_labels())["app"] = "db";
  ASSERT_TRUE(admin_->CreatePod(other).ok());
  auto list = admin_->List("pods", "default", "app=web");
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->items_size(), 2);
  auto page = admin_->List("po", "default", "", "", 2);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->items_size(), 2);
  EXPECT_EQ(page->remaining_item_count(), 1);
  auto rest = admin_->List("pods", "default", "", "", 2, page->continue_());
  ASSERT_TRUE(rest.ok());
  EXPECT_EQ(rest->items_size(), 1);
  EXPECT_EQ(admin_->List("pods", "", "", "spec.containers=x").status().message(),
            "field label not supported: spec.containers");
  EXPECT_EQ(admin_->List("pdos", "").status().message(),
            "the server doesn't have a resource type \"pdos\"");

  ASSERT_TRUE(admin_->Delete("pods", "default", "web-2").ok());
  EXPECT_EQ(admin_->GetPod("web-2").status().message(), "pods \"web-2\" not found");
  // A pod on a node terminates gracefully: it is only marked.
  ASSERT_TRUE(admin_->CreatePod(NewPod("bound", "node01")).ok());
  ASSERT_TRUE(admin_->Delete("pods", "default", "bound").ok());
  auto marked = admin_->GetPod("bound");
  ASSERT_TRUE(marked.ok());
  EXPECT_FALSE(marked->metadata().deletion_timestamp().empty());
  EXPECT_EQ(marked->metadata().deletion_grace_period_seconds(), 30);
  ASSERT_TRUE(admin_->Delete("pods", "default", "bound", 0).ok());
  EXPECT_EQ(admin_->GetPod("bound").status().code(), absl::StatusCode::kNotFound);
}

TEST_P(ApiServerTest, WatchesResumeAcrossAnApiserverKillWithoutGapOrDuplicate) {
  auto list = admin_->List("pods", "default");
  ASSERT_TRUE(list.ok());
  std::string rv = list->resource_version();
  {
    Watcher w(*admin_, rv);
    ASSERT_TRUE(admin_->CreatePod(NewPod("a")).ok());
    ASSERT_TRUE(admin_->Patch<api::Pod>("pods", "default", "a", R"({"metadata":{"labels":{"x":"1"}}})").ok());
    ASSERT_TRUE(admin_->Delete("pods", "default", "a").ok());
    auto events = w.Wait(3);
    ASSERT_EQ(events.size(), 3u);
    EXPECT_EQ(NameOf(events[0]), "ADDED:a");
    EXPECT_EQ(NameOf(events[1]), "MODIFIED:a");
    EXPECT_EQ(NameOf(events[2]), "DELETED:a");
    rv = events[2].resource_version();
  }
  // Changes made while this client was away, through another apiserver, are not lost: a new
  // apiserver resumes the watch from the client's last version, without a relist.
  ASSERT_TRUE(RestartApiserver().ok());
  ASSERT_TRUE(admin_->CreatePod(NewPod("b")).ok());
  ASSERT_TRUE(RestartApiserver().ok());
  {
    Watcher w(*admin_, rv);
    ASSERT_TRUE(admin_->CreatePod(NewPod("c")).ok());
    auto events = w.Wait(2);
    ASSERT_EQ(events.size(), 2u) << (events.empty() ? std::string("none") : NameOf(events[0]));
    EXPECT_EQ(NameOf(events[0]), "ADDED:b");
    EXPECT_EQ(NameOf(events[1]), "ADDED:c");
    rv = events[1].resource_version();
  }
  // Once the store has compacted that history, an apiserver started afterwards cannot serve
  // it: the version is too old and the client must relist.
  EtcdClient store(store_address());
  int64_t compact_to = 0;
  ASSERT_TRUE(absl::SimpleAtoi(rv, &compact_to));
  ASSERT_TRUE(store.Compact(compact_to, true).ok());
  ASSERT_TRUE(RestartApiserver().ok());
  Watcher old(*admin_, "2");
  auto ended = old.Ended();
  ASSERT_TRUE(ended.has_value());
  EXPECT_EQ(ended->error_code(), grpc::StatusCode::OUT_OF_RANGE);
  EXPECT_NE(ended->error_message().find("too old resource version"), std::string::npos);
  Watcher fresh(*admin_, rv);
  ASSERT_TRUE(admin_->CreatePod(NewPod("d")).ok());
  auto events = fresh.Wait(1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(NameOf(events[0]), "ADDED:d");
}

TEST_P(ApiServerTest, FieldSelectedWatchesSeePodsEnterAndLeave) {
  Watcher w(*admin_, "0", "spec.nodeName=node01");
  ASSERT_TRUE(admin_->CreatePod(NewPod("p")).ok());
  ASSERT_TRUE(admin_->Patch<api::Pod>("pods", "default", "p", R"({"spec":{"nodeName":"node01"}})").ok());
  auto events = w.Wait(1);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(NameOf(events[0]), "ADDED:p") << "bound to node01: it enters the selection";

  // Entering and leaving a label selection, live and replayed from the cache's window alike.
  const std::string rv = admin_->List("pods", "default")->resource_version();
  Watcher live(*admin_, rv, "", "tier=front");
  ASSERT_TRUE(admin_->Patch<api::Pod>("pods", "default", "p", R"({"metadata":{"labels":{"tier":"front"}}})").ok());
  ASSERT_TRUE(admin_->Patch<api::Pod>("pods", "default", "p", R"({"metadata":{"labels":{"tier":"back"}}})").ok());
  auto seen = live.Wait(2);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(NameOf(seen[0]), "ADDED:p");
  EXPECT_EQ(NameOf(seen[1]), "DELETED:p");
  Watcher replay(*admin_, rv, "", "tier=front");
  auto replayed = replay.Wait(2);
  ASSERT_EQ(replayed.size(), 2u);
  EXPECT_EQ(NameOf(replayed[0]), "ADDED:p");
  EXPECT_EQ(NameOf(replayed[1]), "DELETED:p");
}

// The apiserver's resident memory, from /proc.
size_t RssBytes(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

TEST_P(ApiServerTest, AStalledWatcherIsCutOffWithoutDelayingOthersOrGrowingMemory) {
  constexpr int kPods = 5;
  std::vector<api::Pod> pods;
  for (int i = 0; i < kPods; ++i) {
    auto p = admin_->CreatePod(NewPod("p" + std::to_string(i)));
    ASSERT_TRUE(p.ok()) << p.status();
    pods.push_back(*p);
  }
  auto list = admin_->List("pods", "default");
  // The stalled watcher never reads; the server keeps at most 50 events for it.
  grpc::ClientContext stalled_ctx;
  admin_->Auth(&stalled_ctx);
  // Long enough that only being cut off ends it, on a slow (sanitizer) build too.
  stalled_ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
  apiserver::WatchRequest req;
  req.set_resource("pods");
  req.set_namespace_("default");
  req.set_resource_version(list->resource_version());
  auto stalled = admin_->stub()->Watch(&stalled_ctx, req);
  Watcher reader(*admin_, list->resource_version());
  // 200 KiB objects, updated over and over: what flows through is far more than what lives.
  const std::string big(200 * 1024, 'x');
  int updates = 0;
  auto update = [&](int n) {
    for (int i = 0; i < n; ++i, ++updates) {
      api::Pod& pod = pods[static_cast<size_t>(updates % kPods)];
      (*pod.mutable_metadata()->mutable_annotations())["blob"] = big + std::to_string(updates);
      auto r = admin_->Update(pod);
      ASSERT_TRUE(r.ok()) << updates << ": " << r.status();
      pod = *r;
      // A watcher that keeps up stays within a few events of the writes. Unpaced, writes on
      // an idle machine (~2,000 of 200 KiB a second) outran any reader past its 50-event
      // queue, and it was rightly cut off too.
      reader.WaitCount(static_cast<size_t>(std::max(0, updates - 10)));
    }
  };
  update(100);  // the cache's window is full from here on
  ASSERT_EQ(reader.WaitCount(100), 100u) << "the reading watcher keeps up";
  const size_t warm = RssBytes(cluster_.apiserver().pid());
  update(200);  // 40 MiB more through the apiserver
  const size_t delivered = reader.WaitCount(300);
  EXPECT_EQ(delivered, 300u) << "the reading watcher got every event; it ended with: "
                       << (delivered < 300 && reader.Ended() ? reader.Ended()->error_message() : "");
  const size_t after = RssBytes(cluster_.apiserver().pid());
  std::printf("apiserver RSS: %zu MiB warm, %zu MiB after 40 MiB more\n", warm >> 20, after >> 20);
  // Bounded by the cache's window (16 MiB here) and the stalled watcher's 50 events, not by
  // what was written; a queue without a bound would hold all 40 MiB.
#if defined(MKUBE_ASAN)
  // AddressSanitizer keeps freed memory in quarantine: RSS says nothing of what is held.
#else
  EXPECT_LT(after, warm + (24u << 20))
      << "warm " << (warm >> 20) << " MiB, after " << (after >> 20) << " MiB";
#endif
  // The stalled one was closed with a resumable error once it fell behind.
  apiserver::WatchBatch batch;
  int got = 0;
  while (stalled->Read(&batch)) got += batch.events_size();
  auto st = stalled->Finish();
  EXPECT_LT(got, 300);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << st.error_message();
}

TEST_P(ApiServerTest, AuthenticationAndNodeRestriction) {
  Client anonymous(address(), "");
  EXPECT_EQ(anonymous.List("pods", "").status().code(), absl::StatusCode::kUnauthenticated);
  Client wrong(address(), "nope");
  EXPECT_EQ(wrong.List("pods", "").status().code(), absl::StatusCode::kUnauthenticated);

  Client node01(address(), "node01-token");
  EXPECT_TRUE(node01.List("pods", "").ok()) << "nodes may read";
  EXPECT_EQ(node01.CreatePod(NewPod("sneaky")).status().code(),
            absl::StatusCode::kPermissionDenied);

  ASSERT_TRUE(admin_->CreatePod(NewPod("on-01", "node01")).ok());
  ASSERT_TRUE(admin_->CreatePod(NewPod("on-02", "node02")).ok());
  EXPECT_TRUE(node01.Patch<api::Pod>("pods", "default", "on-01", R"({"status":{"phase":"Running"}})", "status").ok());
  auto denied = node01.Patch<api::Pod>("pods", "default", "on-02", R"({"status":{"phase":"Failed"}})", "status");
  EXPECT_EQ(denied.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(std::string(denied.status().message()).find("system:node:node01"), std::string::npos);
  EXPECT_EQ(admin_->GetPod("on-02")->status().phase(), "Pending") << "nothing changed";
  EXPECT_EQ(node01.Patch<api::Pod>("pods", "default", "on-01", R"({"spec":{"nodeName":"x"}})")
                .status()
                .code(),
            absl::StatusCode::kPermissionDenied)
      << "only the status";
  // The same through updates, which are checked against the pod as the write finds it.
  api::Pod on01 = *admin_->GetPod("on-01");
  on01.mutable_status()->set_phase("Succeeded");
  EXPECT_TRUE(node01.Update(on01, "status").ok());
  api::Pod on02 = *admin_->GetPod("on-02");
  on02.mutable_status()->set_phase("Failed");
  auto update_denied = node01.Update(on02, "status");
  EXPECT_EQ(update_denied.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(std::string(update_denied.status().message()).find("system:node:node01"),
            std::string::npos);
  // A pod that claims to be bound to node01 is still judged by where it is bound.
  on02.mutable_spec()->set_node_name("node01");
  EXPECT_EQ(node01.Update(on02, "status").status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(admin_->GetPod("on-02")->status().phase(), "Pending") << "nothing changed";
  on01 = *admin_->GetPod("on-01");
  on01.mutable_metadata()->mutable_labels()->insert({"x", "y"});
  EXPECT_EQ(node01.Update(on01).status().code(), absl::StatusCode::kPermissionDenied)
      << "only the status";

  Client sched(address(), "sched-token");
  EXPECT_TRUE(sched.List("nodes", "").ok());
  EXPECT_EQ(sched.Delete("pods", "default", "on-01").code(), absl::StatusCode::kPermissionDenied);
}

TEST_P(ApiServerTest, BindingEvictionAndScaleSubresources) {
  ASSERT_TRUE(admin_->CreatePod(NewPod("pending")).ok());
  Client sched(address(), "sched-token");
  auto bind = [&](const std::string& node) {
    api::Binding b;
    b.mutable_metadata()->set_name("pending");
    b.mutable_target()->set_kind("Node");
    b.mutable_target()->set_name(node);
    return sched.Create("pods", b, "default", "pending", "binding").status();
  };
  ASSERT_TRUE(bind("node01").ok());
  EXPECT_EQ(admin_->GetPod("pending")->spec().node_name(), "node01");
  auto again = bind("node02");
  EXPECT_EQ(again.code(), absl::StatusCode::kAborted);
  EXPECT_NE(std::string(again.message()).find("is already assigned to node \"node01\""),
            std::string::npos) << again;

  // Eviction deletes gracefully, as a delete would.
  api::Eviction ev;
  ev.mutable_metadata()->set_name("pending");
  ev.mutable_delete_options()->set_grace_period_seconds(0);
  ASSERT_TRUE(admin_->Create("pods", ev, "default", "pending", "eviction").ok());
  EXPECT_EQ(admin_->GetPod("pending").status().code(), absl::StatusCode::kNotFound);

  auto objs = api::DecodeManifests(
      "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n"
      "  selector:\n    matchLabels:\n      app: web\n  template:\n    metadata:\n      labels:\n"
      "        app: web\n    spec:\n      containers:\n      - name: c\n        image: nginx\n");
  ASSERT_TRUE(objs.ok());
  ASSERT_TRUE(admin_->Create("deployments", *(*objs)[0].message).ok());
  api::Scale scale;
  {
    grpc::ClientContext ctx;
    admin_->Auth(&ctx);
    apiserver::GetRequest req;
    req.set_resource("deployments");
    req.set_namespace_("default");
    req.set_name("web");
    req.set_subresource("scale");
    apiserver::ObjectReply reply;
    ASSERT_TRUE(admin_->stub()->Get(&ctx, req, &reply).ok());
    scale.ParseFromString(reply.object());
  }
  EXPECT_EQ(scale.spec().replicas(), 2);
  EXPECT_EQ(scale.status().selector(), "app=web");
  scale.mutable_spec()->set_replicas(5);
  {
    grpc::ClientContext ctx;
    admin_->Auth(&ctx);
    apiserver::UpdateRequest req;
    req.set_resource("deployments");
    req.set_namespace_("default");
    req.set_subresource("scale");
    req.set_object(scale.SerializeAsString());
    apiserver::ObjectReply reply;
    auto st = admin_->stub()->Update(&ctx, req, &reply);
    ASSERT_TRUE(st.ok()) << st.error_message();
  }
  auto d = admin_->Patch<api::Deployment>("deployments", "default", "web", "{}");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->spec().replicas(), 5);
  EXPECT_EQ(d->metadata().generation(), 2);

  // The seed's legacy Deployment has no selector: the server derives it from the template,
  // as for extensions/v1beta1, and serves the object as apps/v1.
  auto legacy = api::DecodeManifests(
      "apiVersion: extensions/v1beta1\nkind: Deployment\nmetadata:\n  name: myapp\nspec:\n"
      "  replicas: 3\n  template:\n    metadata:\n      labels:\n        app: myapp\n"
      "    spec:\n      nodeName: node02\n      containers:\n      - name: myapp\n"
      "        image: niginx\n        ports:\n        - containerPort: 80\n");
  ASSERT_TRUE(legacy.ok());
  {
    auto stored = admin_->Create("deployments", *(*legacy)[0].message);
    ASSERT_TRUE(stored.ok()) << stored.status();
    api::Deployment created;
    created.ParseFromString(*stored);
    EXPECT_EQ(created.api_version(), "apps/v1");
    EXPECT_EQ(created.spec().selector().match_labels().at("app"), "myapp");
  }
}

// Like Kubernetes' apiserver, every --etcd-compaction-interval it compacts the store to the
// revision it saw one interval before; apiservers of one store take turns through
// compact_rev_key. Objects stay, old revisions go, and the apiserver keeps serving.
TEST_P(ApiServerTest, TheStoreIsCompactedOneIntervalBehind) {
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(admin_->CreatePod(NewPod("old-" + std::to_string(i))).ok());
  EtcdClient store(store_address());
  auto before = store.Get("compact_rev_key");
  ASSERT_TRUE(before.ok()) << before.status();
  const int64_t written = before->header().revision();

  std::unique_ptr<ApiServerProcess> compacting;
  ASSERT_TRUE(
      cluster_.StartApiserver("api2", {"--etcd-compaction-interval", "500ms"}, &compacting).ok());
  // The first step notes the revision, the second compacts to it.
  ASSERT_TRUE(Eventually(
      [&] {
        auto old = store.Get("any", written);
        return !old.ok() && absl::IsOutOfRange(old.status());
      },
      std::chrono::seconds(20)))
      << "the store was not compacted past revision " << written;
  auto key = store.Get("compact_rev_key");
  ASSERT_TRUE(key.ok());
  ASSERT_EQ(key->kvs_size(), 1);
  EXPECT_GE(key->kvs(0).version(), 2) << "each compaction bumps the shared key";

  Client client(compacting->address(), "admin-token");
  for (int i = 0; i < 3; ++i) {
    auto pod = client.GetPod("old-" + std::to_string(i));
    EXPECT_TRUE(pod.ok()) << pod.status();
  }
  EXPECT_TRUE(client.CreatePod(NewPod("new-0")).ok());
  EXPECT_TRUE(admin_->GetPod("new-0").ok()) << "the first apiserver sees it too";

  // A bad interval is refused with a clear message.
  auto bad = RunCommand({BinDir() + "/mkube-apiserver", "--insecure-plaintext", "--token-file",
                         cluster_.dir().Sub("tokens.csv"), "--store-endpoints", store_address(),
                         "--etcd-compaction-interval", "soon"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--etcd-compaction-interval: soon is not a duration"), std::string::npos)
      << bad.err;
}

// The store takes requests of 1.5 MiB and messages of 2 MiB; kube-apiserver takes bodies of
// 3 MiB and passes etcd's refusal of a larger object on. No gRPC internals reach the client,
// and nothing too large reaches the store.
TEST_P(ApiServerTest, ObjectsTooLargeForTheStoreAreRefusedInEtcdsWords) {
  // Over the store's request limit, and over its message limit.
  for (size_t bytes : {size_t{1600} << 10, size_t{2500} << 10}) {
    auto pod = NewPod("big-" + std::to_string(bytes));
    pod.mutable_spec()->mutable_containers(0)->add_args(std::string(bytes, 'x'));
    auto r = admin_->CreatePod(pod);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kUnknown) << r.status();
    EXPECT_EQ(r.status().message(), "etcdserver: request is too large");
    EXPECT_EQ(admin_->GetPod(pod.metadata().name()).status().code(), absl::StatusCode::kNotFound);
  }
  // Validation answers first, as in Kubernetes.
  auto misnamed = NewPod("Big");
  misnamed.mutable_spec()->mutable_containers(0)->add_args(std::string(2500 << 10, 'x'));
  auto r = admin_->CreatePod(misnamed);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(r.status().message()).rfind("Pod \"Big\" is invalid: metadata.name: ", 0),
            0u)
      << r.status();
  auto annotated = NewPod("annotated");
  (*annotated.mutable_metadata()->mutable_annotations())["big"] = std::string(1 << 20, 'x');
  EXPECT_EQ(admin_->CreatePod(annotated).status().message(),
            "Pod \"annotated\" is invalid: metadata.annotations: Too long: may not be more than "
            "262144 bytes");

  // An update and a patch that would make an object too large.
  auto small = admin_->CreatePod(NewPod("grows"));
  ASSERT_TRUE(small.ok()) << small.status();
  auto grown = *small;
  grown.mutable_spec()->mutable_containers(0)->add_args(std::string(2500 << 10, 'x'));
  EXPECT_EQ(admin_->Update(grown).status(), absl::UnknownError("etcdserver: request is too large"));
  api::Deployment d;
  d.mutable_metadata()->set_name("grows");
  (*d.mutable_spec()->mutable_selector()->mutable_match_labels())["app"] = "web";
  (*d.mutable_spec()->mutable_template_()->mutable_metadata()->mutable_labels())["app"] = "web";
  auto* c = d.mutable_spec()->mutable_template_()->mutable_spec()->add_containers();
  c->set_name("c");
  c->set_image("nginx");
  ASSERT_TRUE(admin_->Create("deployments", d).ok());
  const std::string patch = R"({"spec":{"template":{"spec":{"containers":[{"name":"c","image":"nginx","args":[")" +
                            std::string(1600 << 10, 'x') + R"("]}]}}}})";
  EXPECT_EQ(admin_->Patch<api::Deployment>("deployments", "default", "grows", patch).status(),
            absl::UnknownError("etcdserver: request is too large"));

  // Over the apiserver's own limit, gRPC refuses the request (mkubectl words that as
  // Kubernetes does: "Request entity too large: limit is 3145728").
  auto huge = NewPod("huge");
  huge.mutable_spec()->mutable_containers(0)->add_args(std::string(4 << 20, 'x'));
  r = admin_->CreatePod(huge);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(std::string(r.status().message()).find(" vs. 3145728)"), std::string::npos)
      << r.status();

  // The store still answers.
  EXPECT_TRUE(admin_->CreatePod(NewPod("after")).ok());
  EXPECT_EQ(admin_->GetPod("grows")->spec().containers(0).args_size(), 0);
}

// An apiserver told the store takes more than it does meets the store's own refusals: they
// are passed on in etcd's words too, never as gRPC's.
TEST_P(ApiServerTest, TheStoresOwnRefusalsOfLargeObjectsAreWordedAsEtcds) {
  std::unique_ptr<ApiServerProcess> trusting;
  auto started =
      cluster_.StartApiserver("trusting", {"--store-max-request-bytes=1073741824"}, &trusting);
  ASSERT_TRUE(started.ok()) << started;
  Client client(trusting->address(), "admin-token");
  for (size_t bytes : {size_t{1600} << 10, size_t{2500} << 10}) {
    auto pod = NewPod("big-" + std::to_string(bytes));
    pod.mutable_spec()->mutable_containers(0)->add_args(std::string(bytes, 'x'));
    EXPECT_EQ(client.CreatePod(pod).status(), absl::UnknownError("etcdserver: request is too large"));
  }
  EXPECT_TRUE(client.CreatePod(NewPod("after")).ok());
}

INSTANTIATE_TEST_SUITE_P(Stores, ApiServerTest, ::testing::Values("mkube", "etcd"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace mkube::testing
