#include "apiserver/server/metrics.h"

#include <set>

#include "absl/synchronization/blocking_counter.h"
#include "api/object.h"
#include "base/log.h"
#include "base/status.h"
#include "fmt/format.h"
#include "proto/agent/stats.grpc.pb.h"

namespace mkube::apiserver::server {

namespace {

spdlog::logger& Log() {
  static spdlog::logger& logger = log::Logger("metrics");
  return logger;
}

// The objects of `resource` a metrics list covers: its namespace and selectors.
template <typename T>
absl::StatusOr<std::vector<T>> ListOf(registry::Registry* registry, const std::string& resource,
                                      const ListRequest& req) {
  ListRequest of;
  of.set_resource(resource);
  of.set_namespace_(req.namespace_());
  of.set_label_selector(req.label_selector());
  of.set_field_selector(req.field_selector());
  MKUBE_ASSIGN_OR_RETURN(auto list, registry->List(of));
  std::vector<T> out(list.items_size());
  for (int i = 0; i < list.items_size(); ++i) {
    if (!out[i].ParseFromString(list.items(i))) {
      return absl::InternalError("cannot decode a cached object");
    }
  }
  return out;
}

// The metrics' own metadata: the object's name and labels, made now (metrics-server's way).
void Describe(const api::ObjectMeta& of, const std::string& now, api::ObjectMeta* meta) {
  meta->set_name(of.name());
  meta->set_namespace_(of.namespace_());
  *meta->mutable_labels() = of.labels();
  meta->set_creation_timestamp(now);
}

absl::Status NotFound(const api::KindInfo& kind, const std::string& what) {
  const std::string resource = kind.kind == "PodMetrics" ? "podmetrics" : "nodemetrics";
  return absl::NotFoundError(fmt::format("{}.{} \"{}\" not found", resource, kind.group, what));
}

}  // namespace

std::map<std::string, agent::SummaryReply> MetricsApi::Summaries(
    const std::vector<api::Node>& nodes) {
  struct Call {
    std::string node;
    std::unique_ptr<agent::Stats::Stub> stub;
    grpc::ClientContext ctx;
    agent::SummaryRequest req;
    agent::SummaryReply reply;
    grpc::Status status;
  };
  std::vector<std::unique_ptr<Call>> calls;
  const auto deadline = std::chrono::system_clock::now() + absl::ToChronoMilliseconds(timeout_);
  for (const auto& n : nodes) {
    auto channel = agents_->ChannelTo(n);
    if (!channel.ok()) continue;  // a node without an agent to ask (a simulated one)
    auto c = std::make_unique<Call>();
    c->node = n.metadata().name();
    c->stub = agent::Stats::NewStub(*channel);
    c->ctx.set_deadline(deadline);
    agents_->Authorize(&c->ctx);
    calls.push_back(std::move(c));
  }
  // Each call's status is its own; the counter orders those writes before Wait returns, and
  // may go away once it has (which a mutex the callbacks unlock would not allow).
  absl::BlockingCounter pending(static_cast<int>(calls.size()));
  for (auto& c : calls) {
    Call* call = c.get();
    call->stub->async()->Summary(&call->ctx, &call->req, &call->reply,
                                 [&pending, call](grpc::Status st) {
                                   call->status = std::move(st);
                                   pending.DecrementCount();
                                 });
  }
  pending.Wait();
  std::map<std::string, agent::SummaryReply> out;
  for (auto& c : calls) {
    if (!c->status.ok()) {
      Log().debug("no metrics from the agent of node {}: {}", c->node, c->status.error_message());
      continue;
    }
    if (c->reply.has_node()) out[c->node] = std::move(c->reply);
  }
  return out;
}

std::vector<api::NodeMetrics> MetricsApi::NodeMetrics(const std::vector<api::Node>& nodes) {
  auto summaries = Summaries(nodes);
  const std::string now = api::NowRfc3339();
  const api::KindInfo& kind = *api::FindResource("nodes.metrics.k8s.io");
  std::vector<api::NodeMetrics> out;
  for (const auto& n : nodes) {
    auto s = summaries.find(n.metadata().name());
    if (s == summaries.end()) continue;
    api::NodeMetrics m = s->second.node();
    m.set_api_version(kind.api_version());
    m.set_kind(kind.kind);
    Describe(n.metadata(), now, m.mutable_metadata());
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<api::PodMetrics> MetricsApi::PodMetrics(const std::vector<api::Pod>& pods) {
  std::set<std::string> node_names;
  for (const auto& p : pods) {
    if (!p.spec().node_name().empty()) node_names.insert(p.spec().node_name());
  }
  std::vector<api::Node> nodes;
  for (const auto& name : node_names) {
    auto node = registry_->GetAs<api::Node>("nodes", "", name);
    if (node.ok()) nodes.push_back(std::move(*node));
  }
  std::map<std::string, const api::PodMetrics*> by_uid;
  auto summaries = Summaries(nodes);
  for (const auto& [node, s] : summaries) {
    for (const auto& p : s.pods()) by_uid[p.metadata().uid()] = &p;
  }
  const std::string now = api::NowRfc3339();
  const api::KindInfo& kind = *api::FindResource("pods.metrics.k8s.io");
  std::vector<api::PodMetrics> out;
  for (const auto& p : pods) {
    auto found = by_uid.find(p.metadata().uid());
    if (found == by_uid.end()) continue;
    api::PodMetrics m = *found->second;
    m.set_api_version(kind.api_version());
    m.set_kind(kind.kind);
    m.mutable_metadata()->Clear();
    Describe(p.metadata(), now, m.mutable_metadata());
    out.push_back(std::move(m));
  }
  return out;
}

absl::StatusOr<std::string> MetricsApi::Get(const api::KindInfo& kind, const std::string& ns,
                                            const std::string& name) {
  if (kind.kind == "NodeMetrics") {
    auto node = registry_->GetAs<api::Node>("nodes", "", name);
    if (!node.ok()) {
      if (absl::IsNotFound(node.status())) return NotFound(kind, name);
      return node.status();
    }
    auto m = NodeMetrics({*node});
    if (m.empty()) return NotFound(kind, name);
    return m[0].SerializeAsString();
  }
  auto pod = registry_->GetAs<api::Pod>("pods", ns, name);
  if (!pod.ok()) {
    if (absl::IsNotFound(pod.status())) return NotFound(kind, ns + "/" + name);
    return pod.status();
  }
  auto m = PodMetrics({*pod});
  if (m.empty()) return NotFound(kind, ns + "/" + name);
  return m[0].SerializeAsString();
}

absl::StatusOr<ListReply> MetricsApi::List(const api::KindInfo& kind, const ListRequest& req) {
  ListReply reply;
  if (kind.kind == "NodeMetrics") {
    MKUBE_ASSIGN_OR_RETURN(auto nodes, ListOf<api::Node>(registry_, "nodes", req));
    for (const auto& m : NodeMetrics(nodes)) reply.add_items(m.SerializeAsString());
    return reply;
  }
  MKUBE_ASSIGN_OR_RETURN(auto pods, ListOf<api::Pod>(registry_, "pods", req));
  for (const auto& m : PodMetrics(pods)) reply.add_items(m.SerializeAsString());
  return reply;
}

}  // namespace mkube::apiserver::server
