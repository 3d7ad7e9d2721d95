// The Kubernetes HTTP API front over the registry, driven without sockets: each request goes
// to Front::Handle with an Exchange that records the answer.
#include "apiserver/rest/front.h"

#include <set>

#include <gtest/gtest.h>

#include "absl/synchronization/mutex.h"
#include "apiserver/auth/auth.h"
#include "apiserver/rest/discovery.h"
#include "registry_env.h"

namespace mkube::apiserver::rest {
namespace {

using mkube::http::Request;
using mkube::http::Response;

class RecordingExchange final : public mkube::http::Exchange {
 public:
  void Finish(Response r) override {
    absl::MutexLock l(&mu_);
    response_ = std::move(r);
  }
  void Start(int status, std::string content_type) override {
    absl::MutexLock l(&mu_);
    stream_status_ = status;
  }
  bool Write(std::string chunk) override {
    absl::MutexLock l(&mu_);
    body_ += chunk;
    return true;
  }
  bool Write(mkube::http::Piece piece) override { return Write(std::string(*piece)); }
  bool WriteWaiting(std::string chunk) override { return Write(std::move(chunk)); }
  void End() override {
    absl::MutexLock l(&mu_);
    ended_ = true;
  }
  void AcceptWebSocket(std::string, std::function<mkube::http::WebSocketHandlers(
                                        mkube::http::WebSocketPtr)>) override {}
  void OnClose(std::function<void()> f) override {
    absl::MutexLock l(&mu_);
    on_close_ = std::move(f);
  }

  Response Wait() {
    absl::MutexLock l(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(+[](std::optional<Response>* r) { return r->has_value(); },
                                         &response_),
                         absl::Seconds(10));
    return response_.value_or(Response{.status = -1});
  }
  // The streamed body once it holds `n` lines.
  std::vector<Json> Lines(size_t n) {
    absl::MutexLock l(&mu_);
    auto enough = [this, n] { return static_cast<size_t>(std::count(body_.begin(), body_.end(), '\n')) >= n; };
    mu_.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(10));
    std::vector<Json> out;
    size_t start = 0;
    for (size_t nl; (nl = body_.find('\n', start)) != std::string::npos; start = nl + 1) {
      out.push_back(Json::parse(body_.substr(start, nl - start)));
    }
    return out;
  }
  int stream_status() {
    absl::MutexLock l(&mu_);
    return stream_status_;
  }
  void Close() {
    std::function<void()> f;
    {
      absl::MutexLock l(&mu_);
      f = std::move(on_close_);
    }
    if (f) f();
  }

 private:
  absl::Mutex mu_;
  std::optional<Response> response_;
  int stream_status_ = 0;
  std::string body_;
  bool ended_ = false;
  std::function<void()> on_close_;
};

class FrontTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto env = testing::RegistryEnv::Start();
    ASSERT_TRUE(env.ok()) << env.status();
    env_ = std::move(*env);
    auto authn = auth::TokenAuthenticator::FromText(
        "admin-token,admin,1,\"system:masters\"\nnode-token,system:node:node01,2,\"system:nodes\"\n");
    ASSERT_TRUE(authn.ok());
    authn_ = std::make_unique<auth::TokenAuthenticator>(std::move(*authn));
    gate_ = std::make_unique<server::Gate>(env_->registry.get(), authn_.get());
    writes_ = std::make_unique<server::SizedWrites>(env_->registry.get(), 1 << 20);
    front_ = std::make_unique<Front>(env_->registry.get(), gate_.get(), writes_.get(), nullptr, nullptr,
                                     mkube::http::HealthChecks{}, &metrics_);
  }
  void TearDown() override {
    front_->Stop();
    front_.reset();
  }

  std::shared_ptr<RecordingExchange> Send(const std::string& method, const std::string& target,
                                          const std::string& body = "",
                                          const std::string& content_type = "application/json",
                                          const std::string& accept = "application/json",
                                          const std::string& token = "admin-token") {
    Request req;
    req.method = method;
    const size_t q = target.find('?');
    req.path = target.substr(0, q);
    if (q != std::string::npos) req.query = target.substr(q + 1);
    if (!token.empty()) req.headers.emplace_back("authorization", "Bearer " + token);
    req.headers.emplace_back("content-type", content_type);
    req.headers.emplace_back("accept", accept);
    req.body = body;
    auto ex = std::make_shared<RecordingExchange>();
    front_->Handle(std::move(req), ex);
    return ex;
  }
  Response Do(const std::string& method, const std::string& target, const std::string& body = "",
              const std::string& content_type = "application/json",
              const std::string& accept = "application/json") {
    return Send(method, target, body, content_type, accept)->Wait();
  }
  static Json J(const Response& r) { return Json::parse(r.body); }

  std::unique_ptr<testing::RegistryEnv> env_;
  std::unique_ptr<auth::TokenAuthenticator> authn_;
  std::unique_ptr<server::Gate> gate_;
  std::unique_ptr<server::SizedWrites> writes_;
  metrics::Registry metrics_;
  std::unique_ptr<Front> front_;
};

constexpr char kPod[] =
    R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","labels":{"app":"web"}},)"
    R"("spec":{"containers":[{"name":"web","image":"nginx","ports":[{"containerPort":80}]}]}})";
constexpr char kTableAccept[] =
    "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;"
    "g=meta.k8s.io,application/json";

TEST_F(FrontTest, VersionIsPublicAndTheRestNeedsCredentials) {
  auto v = Send("GET", "/version", "", "", "application/json", "")->Wait();
  ASSERT_EQ(v.status, 200);
  EXPECT_EQ(J(v)["major"], "1");
  EXPECT_EQ(J(v)["minor"], "32");
  auto denied = Send("GET", "/api/v1/nodes", "", "", "application/json", "")->Wait();
  EXPECT_EQ(denied.status, 401);
  EXPECT_EQ(J(denied)["reason"], "Unauthorized");
  auto wrong = Send("GET", "/api/v1/nodes", "", "", "application/json", "nope")->Wait();
  EXPECT_EQ(wrong.status, 401);
}

TEST_F(FrontTest, DiscoveryListsKindsSubresourcesAndGroups) {
  Json core = J(Do("GET", "/api/v1"));
  bool eviction = false, pods = false;
  for (const auto& r : core["resources"]) {
    if (r["name"] == "pods") {
      pods = true;
      EXPECT_EQ(r["shortNames"], Json::array({"po"}));
      EXPECT_EQ(r["categories"], Json::array({"all"}));
    }
    if (r["name"] == "pods/eviction") {
      eviction = true;
      EXPECT_EQ(r["group"], "policy");
      EXPECT_EQ(r["version"], "v1");
      EXPECT_EQ(r["kind"], "Eviction");
    }
  }
  EXPECT_TRUE(pods && eviction) << core.dump();
  Json groups = J(Do("GET", "/apis"));
  std::set<std::string> names;
  for (const auto& g : groups["groups"]) names.insert(g["name"]);
  for (const char* g : {"apps", "batch", "policy", "coordination.k8s.io",
                        "authentication.k8s.io", "authorization.k8s.io"}) {
    EXPECT_TRUE(names.count(g)) << g;
  }
  // A group with no resource of its own is not listed (the scale subresource names
  // autoscaling/v1 Scale as its kind, which needs no group of its own in discovery).
  EXPECT_FALSE(names.count("autoscaling"));
  EXPECT_EQ(Do("GET", "/apis/autoscaling/v1").status, 404);
  auto aggregated = Do("GET", "/apis", "", "",
                       "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
                       "application/json");
  EXPECT_EQ(aggregated.content_type, kAggregatedContentType);
  EXPECT_EQ(J(aggregated)["kind"], "APIGroupDiscoveryList");
  EXPECT_EQ(Do("GET", "/apis/nothing.example.com/v1").status, 404);
}

TEST_F(FrontTest, CreateGetListAndTables) {
  auto created = Do("POST", "/api/v1/namespaces/default/pods", kPod);
  ASSERT_EQ(created.status, 201) << created.body;
  EXPECT_EQ(J(created)["apiVersion"], "v1");
  EXPECT_EQ(J(created)["kind"], "Pod");
  EXPECT_EQ(J(created)["metadata"]["namespace"], "default");
  auto got = Do("GET", "/api/v1/namespaces/default/pods/web");
  ASSERT_EQ(got.status, 200);
  EXPECT_EQ(J(got)["spec"]["containers"][0]["image"], "nginx");

  Json table = J(Do("GET", "/api/v1/namespaces/default/pods?limit=500", "", "", kTableAccept));
  ASSERT_EQ(table["kind"], "Table") << table.dump();
  EXPECT_EQ(table["columnDefinitions"][0]["name"], "Name");
  bool wide_ip = false;
  for (const auto& c : table["columnDefinitions"]) {
    if (c["name"] == "IP") wide_ip = c["priority"] == 1;
  }
  EXPECT_TRUE(wide_ip) << table["columnDefinitions"].dump();
  ASSERT_EQ(table["rows"].size(), 1u);
  EXPECT_EQ(table["rows"][0]["cells"][0], "web");
  EXPECT_EQ(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
  EXPECT_EQ(table["rows"][0]["object"]["metadata"]["labels"]["app"], "web");
  EXPECT_FALSE(table["metadata"]["resourceVersion"].get<std::string>().empty());

  Json list = J(Do("GET", "/api/v1/pods?labelSelector=app%3Dweb"));
  EXPECT_EQ(list["kind"], "PodList");
  EXPECT_EQ(list["items"].size(), 1u);
  EXPECT_EQ(J(Do("GET", "/api/v1/pods?labelSelector=app%3Dother"))["items"].size(), 0u);
  EXPECT_EQ(J(Do("GET", "/api/v1/pods?fieldSelector=metadata.name%3Dweb"))["items"].size(), 1u);
}

TEST_F(FrontTest, ErrorsAreStatusesWithKubernetesReasons) {
  auto missing = Do("GET", "/api/v1/namespaces/default/pods/nonexist");
  EXPECT_EQ(missing.status, 404);
  Json m = J(missing);
  EXPECT_EQ(m["kind"], "Status");
  EXPECT_EQ(m["reason"], "NotFound");
  EXPECT_EQ(m["message"], "pods \"nonexist\" not found");
  EXPECT_EQ(m["details"]["kind"], "pods");
  EXPECT_EQ(m["details"]["name"], "nonexist");

  ASSERT_EQ(Do("POST", "/api/v1/namespaces/default/pods", kPod).status, 201);
  auto again = Do("POST", "/api/v1/namespaces/default/pods", kPod);
  EXPECT_EQ(again.status, 409);
  EXPECT_EQ(J(again)["reason"], "AlreadyExists");

  std::string unknown = kPod;
  unknown.replace(unknown.find("\"spec\":{"), 8, "\"spec\":{\"foo\":1,");
  auto strict = Do("POST", "/api/v1/namespaces/default/pods?fieldValidation=Strict", unknown);
  EXPECT_EQ(strict.status, 400);
  EXPECT_EQ(J(strict)["reason"], "BadRequest");
  EXPECT_EQ(J(strict)["message"], "strict decoding error: unknown field \"spec.foo\"");

  auto malformed = Do("POST", "/api/v1/namespaces/default/pods", "{\"metadata\": ");
  EXPECT_EQ(malformed.status, 400);
  auto wrong_kind = Do("POST", "/api/v1/namespaces/default/pods",
                       R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"}})");
  EXPECT_EQ(wrong_kind.status, 400);
  auto mismatch = Do("PUT", "/api/v1/namespaces/default/pods/other", kPod);
  EXPECT_EQ(mismatch.status, 400);
  EXPECT_EQ(J(mismatch)["message"],
            "the name of the object (web) does not match the name on the URL (other)");
  auto cbor = Do("POST", "/api/v1/namespaces/default/pods", kPod, "application/cbor");
  EXPECT_EQ(cbor.status, 415);
  EXPECT_EQ(J(cbor)["reason"], "UnsupportedMediaType");
  auto bad_patch = Do("PATCH", "/api/v1/namespaces/default/pods/web", "{}", "text/plain");
  EXPECT_EQ(bad_patch.status, 415);
  EXPECT_EQ(J(bad_patch)["reason"], "UnsupportedMediaType");
  auto node = Send("DELETE", "/api/v1/namespaces/default/pods/web", "", "application/json",
                   "application/json", "node-token")
                  ->Wait();
  EXPECT_EQ(node.status, 403);
  EXPECT_EQ(J(node)["reason"], "Forbidden");
  EXPECT_EQ(Do("POST", "/api/v1/namespaces/default/pods/web", kPod).status, 405);
}

TEST_F(FrontTest, PatchTypes) {
  ASSERT_EQ(Do("POST", "/api/v1/nodes",
               R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"},"spec":{"taints":[)"
               R"({"key":"a","effect":"NoSchedule"},{"key":"b","effect":"NoExecute"}]}})")
                .status,
            201);
  // kubectl taint sends the whole list that remains: taints are atomic, not merged by key.
  auto smp = Do("PATCH", "/api/v1/nodes/n1",
                R"({"spec":{"taints":[{"key":"b","effect":"NoExecute"}]}})",
                "application/strategic-merge-patch+json");
  ASSERT_EQ(smp.status, 200) << smp.body;
  EXPECT_EQ(J(smp)["spec"]["taints"].size(), 1u);
  auto cordon = Do("PATCH", "/api/v1/nodes/n1", R"({"spec":{"unschedulable":true}})",
                   "application/strategic-merge-patch+json");
  EXPECT_EQ(J(cordon)["spec"]["unschedulable"], true);
  for (const auto& [body, type] :
       std::vector<std::pair<std::string, std::string>>{
           {"{\"spec\":", "application/merge-patch+json"},
           {"[1]", "application/strategic-merge-patch+json"},
           {"{}", "application/json-patch+json"}}) {
    auto malformed = Do("PATCH", "/api/v1/nodes/n1", body, type);
    EXPECT_EQ(malformed.status, 400) << body;
    EXPECT_EQ(J(malformed)["reason"], "BadRequest");
  }
  auto label = Do("PATCH", "/api/v1/nodes/n1", R"({"metadata":{"labels":{"abc":"aaa"}}})",
                  "application/merge-patch+json");
  EXPECT_EQ(J(label)["metadata"]["labels"]["abc"], "aaa");
  auto json = Do("PATCH", "/api/v1/nodes/n1",
                 R"([{"op":"remove","path":"/metadata/labels/abc"}])", "application/json-patch+json");
  ASSERT_EQ(json.status, 200) << json.body;
  EXPECT_FALSE(J(json)["metadata"].contains("labels") && J(json)["metadata"]["labels"].contains("abc"));

  // Server-side apply creates, then updates.
  auto apply = Do("PATCH", "/api/v1/namespaces/default/pods/web?fieldManager=kubectl&force=false",
                  kPod, "application/apply-patch+yaml");
  EXPECT_EQ(apply.status, 201) << apply.body;
  auto reapply = Do("PATCH", "/api/v1/namespaces/default/pods/web?fieldManager=kubectl", kPod,
                    "application/apply-patch+yaml");
  EXPECT_EQ(reapply.status, 200) << reapply.body;
  auto nomanager = Do("PATCH", "/api/v1/namespaces/default/pods/web", kPod,
                      "application/apply-patch+yaml");
  EXPECT_EQ(nomanager.status, 422);
  // Containers merge by name under a strategic merge patch.
  auto image = Do("PATCH", "/api/v1/namespaces/default/pods/web",
                  R"({"spec":{"containers":[{"name":"web","image":"nginx:2"}]}})",
                  "application/strategic-merge-patch+json");
  ASSERT_EQ(image.status, 200) << image.body;
  EXPECT_EQ(J(image)["spec"]["containers"][0]["ports"][0]["containerPort"], 80);
  // That patch's writer (no fieldManager, no User-Agent: "unknown") took the image from the
  // applier, who now conflicts with it over the image unless it forces.
  auto conflict = Do("PATCH", "/api/v1/namespaces/default/pods/web?fieldManager=kubectl", kPod,
                     "application/apply-patch+yaml");
  ASSERT_EQ(conflict.status, 409) << conflict.body;
  EXPECT_EQ(J(conflict)["reason"], "Conflict");
  EXPECT_EQ(J(conflict)["message"],
            "Apply failed with 1 conflict: conflict with \"unknown\" using v1: "
            ".spec.containers[name=\"web\"].image");
  EXPECT_EQ(J(conflict)["details"]["causes"][0]["type"], "FieldManagerConflict");
  EXPECT_EQ(J(conflict)["details"]["causes"][0]["field"], ".spec.containers[name=\"web\"].image");
  auto forced = Do("PATCH", "/api/v1/namespaces/default/pods/web?fieldManager=kubectl&force=true",
                   kPod, "application/apply-patch+yaml");
  ASSERT_EQ(forced.status, 200) << forced.body;
  EXPECT_EQ(J(forced)["spec"]["containers"][0]["image"], "nginx");
  const auto managers = J(forced)["metadata"]["managedFields"];
  ASSERT_EQ(managers.size(), 1u) << forced.body;
  EXPECT_EQ(managers[0]["manager"], "kubectl");
  EXPECT_EQ(managers[0]["operation"], "Apply");
}

// The Warning headers of an answer.
std::vector<std::string> Warnings(const Response& r) {
  std::vector<std::string> out;
  for (const auto& [k, v] : r.headers) {
    if (k == "Warning") out.push_back(v);
  }
  return out;
}

TEST_F(FrontTest, UnknownFieldsAreRefusedWarnedOfOrIgnoredAsFieldValidationSays) {
  const std::string pod = std::string(kPod).insert(std::string(kPod).find("\"containers\""),
                                                   "\"foo\":1,");
  // Strict: refused, in Kubernetes' words.
  auto strict = Do("POST", "/api/v1/namespaces/default/pods?fieldValidation=Strict", pod);
  ASSERT_EQ(strict.status, 400) << strict.body;
  EXPECT_EQ(J(strict)["message"], "strict decoding error: unknown field \"spec.foo\"");
  // Warn (also the default): created without it, and said so.
  auto warned = Do("POST", "/api/v1/namespaces/default/pods", pod);
  ASSERT_EQ(warned.status, 201) << warned.body;
  EXPECT_FALSE(J(warned)["spec"].contains("foo"));
  EXPECT_EQ(Warnings(warned), std::vector<std::string>{"299 - \"unknown field \\\"spec.foo\\\"\""});
  // Ignore: the same, silently; for a patch too.
  auto patch = Do("PATCH", "/api/v1/namespaces/default/pods/web?fieldValidation=Ignore",
                  R"({"spec":{"bar":2},"metadata":{"labels":{"x":"y"}}})",
                  "application/strategic-merge-patch+json");
  ASSERT_EQ(patch.status, 200) << patch.body;
  EXPECT_TRUE(Warnings(patch).empty());
  EXPECT_EQ(J(patch)["metadata"]["labels"]["x"], "y");
  auto strict_patch = Do("PATCH", "/api/v1/namespaces/default/pods/web?fieldValidation=Strict",
                         R"({"spec":{"bar":2,"$retainKeys":["containers"]}})",
                         "application/strategic-merge-patch+json");
  ASSERT_EQ(strict_patch.status, 400) << strict_patch.body;
  EXPECT_EQ(J(strict_patch)["message"], "strict decoding error: unknown field \"spec.bar\"");
  auto bad = Do("POST", "/api/v1/namespaces/default/pods?fieldValidation=Loose", pod);
  ASSERT_EQ(bad.status, 400);
  EXPECT_EQ(J(bad)["message"],
            "fieldValidation: Unsupported value: \"Loose\": supported values: \"Ignore\", "
            "\"Strict\", \"Warn\"");
}

// A JSON patch's operations are checked as a merge patch's fields: an operation on an
// unknown field goes, unknown fields inside a value go, the rest is applied.
TEST_F(FrontTest, JsonPatchesFollowFieldValidationToo) {
  ASSERT_EQ(Do("POST", "/api/v1/namespaces/default/pods", kPod).status, 201);
  const std::string ops =
      R"([{"op":"add","path":"/metadata/labels/x","value":"1"},)"
      R"({"op":"add","path":"/spec/foo","value":"bar"},)"
      R"({"op":"add","path":"/spec/tolerations","value":[{"key":"a","operator":"Exists","bogus":1}]}])";
  const std::string path = "/api/v1/namespaces/default/pods/web";
  auto strict = Do("PATCH", path + "?fieldValidation=Strict", ops, "application/json-patch+json");
  ASSERT_EQ(strict.status, 400) << strict.body;
  EXPECT_EQ(J(strict)["message"], "strict decoding error: unknown field \"spec.foo\", "
                                  "unknown field \"spec.tolerations[0].bogus\"");
  EXPECT_FALSE(J(Do("GET", path))["metadata"]["labels"].contains("x"));  // nothing written
  auto warned = Do("PATCH", path, ops, "application/json-patch+json");
  ASSERT_EQ(warned.status, 200) << warned.body;
  EXPECT_EQ(Warnings(warned),
            (std::vector<std::string>{"299 - \"unknown field \\\"spec.foo\\\"\"",
                                      "299 - \"unknown field \\\"spec.tolerations[0].bogus\\\"\""}));
  EXPECT_EQ(J(warned)["metadata"]["labels"]["x"], "1");
  EXPECT_EQ(J(warned)["spec"]["tolerations"], Json::parse(R"([{"key":"a","operator":"Exists"}])"));
  auto ignored = Do("PATCH", path + "?fieldValidation=Ignore",
                    R"([{"op":"add","path":"/spec/tolerations/0","value":{"key":"b","zz":2}}])",
                    "application/json-patch+json");
  ASSERT_EQ(ignored.status, 200) << ignored.body;
  EXPECT_TRUE(Warnings(ignored).empty());
  EXPECT_EQ(J(ignored)["spec"]["tolerations"][0], Json::parse(R"({"key":"b","operator":"Equal"})"));
}

TEST_F(FrontTest, WatchSendsOneEventPerLineAfterTheVersionGiven) {
  ASSERT_EQ(Do("POST", "/api/v1/namespaces/default/pods", kPod).status, 201);
  Json list = J(Do("GET", "/api/v1/namespaces/default/pods"));
  const std::string rv = list["metadata"]["resourceVersion"];
  auto watch = Send("GET", "/api/v1/namespaces/default/pods?watch=true&resourceVersion=" + rv +
                               "&timeoutSeconds=30");
  ASSERT_EQ(Do("PATCH", "/api/v1/namespaces/default/pods/web",
               R"({"metadata":{"labels":{"x":"y"}}})", "application/merge-patch+json")
                .status,
            200);
  auto lines = watch->Lines(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(watch->stream_status(), 200);
  EXPECT_EQ(lines[0]["type"], "MODIFIED");  // not ADDED again: only what came after rv
  EXPECT_EQ(lines[0]["object"]["metadata"]["labels"]["x"], "y");
  watch->Close();

  auto table = Send("GET", "/api/v1/namespaces/default/pods?watch=true&resourceVersion=0", "",
                    "application/json", kTableAccept);
  auto added = table->Lines(1);
  ASSERT_FALSE(added.empty());
  EXPECT_EQ(added[0]["type"], "ADDED");
  EXPECT_EQ(added[0]["object"]["kind"], "Table");
  EXPECT_EQ(added[0]["object"]["rows"].size(), 1u);
  table->Close();
}

TEST_F(FrontTest, EvictionDeleteAndReviews) {
  ASSERT_EQ(Do("POST", "/api/v1/namespaces/default/pods", kPod).status, 201);
  auto evicted = Do("POST", "/api/v1/namespaces/default/pods/web/eviction",
                    R"({"kind":"Eviction","apiVersion":"policy/v1","metadata":{"name":"web",)"
                    R"("namespace":"default","creationTimestamp":null},"deleteOptions":{}})");
  ASSERT_EQ(evicted.status, 201) << evicted.body;
  EXPECT_EQ(J(evicted)["status"], "Success");
  EXPECT_EQ(Do("GET", "/api/v1/namespaces/default/pods/web").status, 404);

  ASSERT_EQ(Do("POST", "/api/v1/namespaces/default/pods", kPod).status, 201);
  auto deleted = Do("DELETE", "/api/v1/namespaces/default/pods/web",
                    R"({"propagationPolicy":"Background"})");
  EXPECT_EQ(deleted.status, 200) << deleted.body;
  EXPECT_EQ(Do("GET", "/api/v1/namespaces/default/pods/web").status, 404);

  Json who = J(Do("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                  R"({"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"})"));
  EXPECT_EQ(who["status"]["userInfo"]["username"], "admin");
  Json can = J(Do("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                  R"({"spec":{"resourceAttributes":{"verb":"create","resource":"pods",)"
                  R"("namespace":"default"}}})"));
  EXPECT_EQ(can["status"]["allowed"], true);
  auto everything = [&](const std::string& token) {
    return J(Send("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                  R"({"spec":{"resourceAttributes":{"verb":"*","resource":"*"}}})",
                  "application/json", "application/json", token)
                 ->Wait())["status"]["allowed"];
  };
  EXPECT_EQ(everything("admin-token"), true);
  EXPECT_EQ(everything("node-token"), false);
}

TEST_F(FrontTest, OpenApiNamesEveryKindWithFieldValidation) {
  Json index = J(Do("GET", "/openapi/v3"));
  ASSERT_TRUE(index["paths"].contains("api/v1")) << index.dump();
  const std::string url = index["paths"]["apis/apps/v1"]["serverRelativeURL"];
  Json doc = J(Do("GET", url));
  const Json& patch =
      doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
  EXPECT_EQ(patch["x-kubernetes-group-version-kind"]["kind"], "Deployment");
  bool validation = false;
  for (const auto& p : patch["parameters"]) validation |= p["name"] == "fieldValidation";
  EXPECT_TRUE(validation);
  const Json& schemas = doc["components"]["schemas"];
  ASSERT_TRUE(schemas.contains("io.k8s.api.apps.v1.Deployment"));
  ASSERT_TRUE(schemas.contains("io.k8s.api.core.v1.PodSpec"));
  EXPECT_EQ(schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
                   ["x-kubernetes-patch-merge-key"],
            "name");
  EXPECT_EQ(schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["tolerations"]
                   ["x-kubernetes-list-type"],
            "atomic");
}

}  // namespace
}  // namespace mkube::apiserver::rest
