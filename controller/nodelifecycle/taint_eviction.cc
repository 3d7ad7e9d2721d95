#include "controller/nodelifecycle/taint_eviction.h"

#include <algorithm>
#include <optional>

#include "api/object.h"
#include "api/taints.h"
#include "base/log.h"
#include "controller/internal/indexes.h"
#include "fmt/format.h"

namespace mkube::controller::nodelifecycle {
namespace {

spdlog::logger& Log() {
  static spdlog::logger& logger = log::Logger("taint-eviction-controller");
  return logger;
}

constexpr char kNodePrefix[] = "node/";
constexpr char kPodPrefix[] = "pod/";

bool SameNoExecuteTaints(const api::Node& a, const api::Node& b) {
  auto no_execute = [](const api::Node& n) {
    std::vector<std::string> out;
    for (const auto& t : n.spec().taints()) {
      if (t.effect() == "NoExecute") out.push_back(t.key() + "=" + t.value());
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  return no_execute(a) == no_execute(b);
}

}  // namespace

TaintEvictionController::TaintEvictionController(client::ApiClient* client,
                                                 client::Informer<api::Node>* nodes,
                                                 client::Informer<api::Pod>* pods,
                                                 client::EventRecorder* events,
                                                 client::Clock* clock)
    : Controller("taint-eviction-controller", clock),
      client_(client),
      nodes_(nodes),
      pods_(pods),
      events_(events) {
  IndexPodsByNode(pods_);
  nodes_->AddHandlers({
      .on_add =
          [this](const std::shared_ptr<const api::Node>& n) {
            queue().Add(kNodePrefix + n->metadata().name());
          },
      .on_update =
          [this](const std::shared_ptr<const api::Node>& old_node,
                 const std::shared_ptr<const api::Node>& n) {
            if (!SameNoExecuteTaints(*old_node, *n)) queue().Add(kNodePrefix + n->metadata().name());
          },
  });
  auto pod_changed = [this](const std::shared_ptr<const api::Pod>& p) {
    if (!p->spec().node_name().empty()) queue().Add(kPodPrefix + client::KeyOf(*p));
  };
  pods_->AddHandlers({
      .on_add = pod_changed,
      .on_update =
          [pod_changed](const std::shared_ptr<const api::Pod>& old_pod,
                        const std::shared_ptr<const api::Pod>& p) {
            // Bound, or its tolerations changed.
            if (old_pod->spec().node_name() != p->spec().node_name() ||
                old_pod->spec().tolerations_size() != p->spec().tolerations_size()) {
              pod_changed(p);
            }
          },
      .on_delete = [this](const std::shared_ptr<const api::Pod>& p) { Cancel(*p); },
  });
}

absl::Status TaintEvictionController::Sync(const std::string& key) {
  if (key.starts_with(kNodePrefix)) {
    absl::Status error;
    for (const auto& pod : pods_->ByIndex(kByNode, key.substr(sizeof(kNodePrefix) - 1))) {
      if (auto st = Process(*pod); !st.ok() && error.ok()) error = st;
    }
    return error;
  }
  if (key.starts_with(kPodPrefix)) {
    auto pod = pods_->Get(key.substr(sizeof(kPodPrefix) - 1));
    if (pod) return Process(*pod);
  }
  return absl::OkStatus();
}

absl::Status TaintEvictionController::Process(const api::Pod& pod) {
  auto node = pod.spec().node_name().empty() ? nullptr : nodes_->Get(pod.spec().node_name());
  if (!node || !pod.metadata().deletion_timestamp().empty()) {
    Cancel(pod);
    return absl::OkStatus();
  }
  bool any = false;
  std::optional<int64_t> shortest;  // of the tolerations with seconds that match a taint
  for (const auto& taint : node->spec().taints()) {
    if (taint.effect() != "NoExecute") continue;
    any = true;
    bool tolerated = false;
    for (const auto& t : pod.spec().tolerations()) {
      if (!api::Tolerates(t, taint)) continue;
      tolerated = true;
      if (t.has_toleration_seconds()) {
        const int64_t s = std::max<int64_t>(0, t.toleration_seconds());
        shortest = shortest ? std::min(*shortest, s) : s;
      }
    }
    if (!tolerated) return Evict(pod);
  }
  if (!any || !shortest) {
    Cancel(pod);  // no NoExecute taint, or tolerated for ever
    return absl::OkStatus();
  }
  const std::string key = client::KeyOf(pod);
  const absl::Time now = clock_->Now();
  absl::Time at;
  {
    absl::MutexLock lock(&mu_);
    auto it = scheduled_.find(key);
    // A deletion already planned keeps its time when that comes sooner.
    if (it == scheduled_.end() || it->second.uid != pod.metadata().uid() ||
        it->second.at > now + absl::Seconds(*shortest)) {
      scheduled_[key] = {pod.metadata().uid(), now + absl::Seconds(*shortest)};
    }
    at = scheduled_[key].at;
  }
  if (now >= at) return Evict(pod);
  Log().debug("{}: tolerates the NoExecute taints of {} until {}", key, pod.spec().node_name(),
              api::Rfc3339(at));
  queue().AddAfter(kPodPrefix + key, at - now);
  return absl::OkStatus();
}

void TaintEvictionController::Cancel(const api::Pod& pod) {
  const std::string key = client::KeyOf(pod);
  bool was = false;
  {
    absl::MutexLock lock(&mu_);
    auto it = scheduled_.find(key);
    if (it != scheduled_.end() && it->second.uid == pod.metadata().uid()) {
      scheduled_.erase(it);
      was = true;
    }
  }
  if (was && pod.metadata().deletion_timestamp().empty()) {
    events_->Record(pod, "Normal", "TaintManagerEviction",
                    fmt::format("Cancelling deletion of Pod {}", key));
  }
}

absl::Status TaintEvictionController::Evict(const api::Pod& pod) {
  const std::string key = client::KeyOf(pod);
  {
    absl::MutexLock lock(&mu_);
    scheduled_.erase(key);
  }
  Log().info("{}: evicting: its node {} has a NoExecute taint it does not tolerate (any more)",
             key, pod.spec().node_name());
  events_->Record(pod, "Normal", "TaintManagerEviction",
                  fmt::format("Marking for deletion Pod {}", key));
  // Why it goes, on the pod itself, before it goes.
  api::Pod marked = pod;
  auto* c = marked.mutable_status()->add_conditions();
  c->set_type("DisruptionTarget");
  c->set_status("True");
  c->set_reason("DeletionByTaintManager");
  c->set_message("Taint manager: deleting due to NoExecute taint");
  c->set_last_transition_time(api::Rfc3339(clock_->Now()));
  (void)client_->Update<api::Pod>("pods", pod.metadata().namespace_(), marked, "status");
  apiserver::DeleteRequest req;
  req.set_resource("pods");
  req.set_namespace_(pod.metadata().namespace_());
  req.set_name(pod.metadata().name());
  req.mutable_preconditions()->set_uid(pod.metadata().uid());
  auto r = client_->Delete(req);
  if (r.ok() || r.status().code() == absl::StatusCode::kNotFound) return absl::OkStatus();
  return r.status();
}

}  // namespace mkube::controller::nodelifecycle
