#include "scheduler/framework/node_info.h"

#include <algorithm>

#include "absl/synchronization/mutex.h"

namespace mkube::scheduler::framework {
namespace {

bool Ended(const api::Pod& pod) {
  const std::string& phase = pod.status().phase();
  return phase == "Succeeded" || phase == "Failed";
}

// Removes the pod from the list; the removed entry, or null.
AffinityPodPtr Erase(std::vector<AffinityPodPtr>& pods, const std::string& key) {
  auto it = std::find_if(pods.begin(), pods.end(),
                         [&](const AffinityPodPtr& p) { return PodKey(*p->pod) == key; });
  if (it == pods.end()) return nullptr;
  AffinityPodPtr out = std::move(*it);
  pods.erase(it);
  return out;
}

bool Terminating(const api::Pod& pod) { return !pod.metadata().deletion_timestamp().empty(); }

}  // namespace

std::vector<HostPort> HostPortsOf(const api::Pod& pod) {
  std::vector<HostPort> out;
  for (const auto& c : pod.spec().containers()) {
    for (const auto& p : c.ports()) {
      if (p.host_port() <= 0) continue;
      out.push_back({p.host_ip().empty() ? "0.0.0.0" : p.host_ip(),
                     p.protocol().empty() ? "TCP" : p.protocol(), p.host_port()});
    }
  }
  return out;
}

bool PortsConflict(const HostPort& a, const HostPort& b) {
  if (a.port != b.port || a.protocol != b.protocol) return false;
  return a.ip == b.ip || a.ip == "0.0.0.0" || b.ip == "0.0.0.0";
}

std::string PodKey(const api::Pod& pod) {
  return pod.metadata().namespace_() + "/" + pod.metadata().name();
}

int NodeInfo::FastSlot(std::string_view name) {
  if (name == "cpu") return 0;
  if (name == "memory") return 1;
  if (name == "ephemeral-storage") return 2;
  if (name == "pods") return 3;
  return -1;
}

int64_t NodeInfo::Of(const ResourceList& list, const std::array<int64_t, 4>& fast,
                     std::string_view name) {
  if (const int slot = FastSlot(name); slot >= 0) return fast[slot];
  auto it = list.find(std::string(name));
  return it == list.end() ? 0 : it->second;
}

void NodeInfo::Refresh(const ResourceList& list, std::array<int64_t, 4>& fast) {
  int i = 0;
  for (const char* name : {"cpu", "memory", "ephemeral-storage", "pods"}) {
    auto it = list.find(name);
    fast[i++] = it == list.end() ? 0 : it->second;
  }
}

void NodeInfo::SetNode(NodePtr node) {
  node_ = std::move(node);
  const auto& labels = node_->metadata().labels();
  auto host = labels.find(kHostnameLabel);
  hostname_ = host == labels.end() ? nullptr : &host->second;
  auto zone = labels.find(kZoneLabel);
  zone_ = zone == labels.end() ? nullptr : &zone->second;
  unschedulable_ = node_->spec().unschedulable();
  allocatable_ = Allocatable(*node_);
  Refresh(allocatable_, alloc_fast_);
  limits_pods_ = allocatable_.contains("pods");
  images_.clear();
  for (const auto& image : node_->status().images()) {
    for (const auto& name : image.names()) images_[name] = image.size_bytes();
  }
}

const std::string* NodeInfo::Label(const std::string& key) const {
  if (key == kHostnameLabel) return hostname_;
  if (key == kZoneLabel) return zone_;
  const auto& labels = node_->metadata().labels();
  auto it = labels.find(key);
  return it == labels.end() ? nullptr : &it->second;
}

std::string LabelIndexKey(std::string_view ns, std::string_view key, std::string_view value) {
  std::string out;
  out.reserve(ns.size() + key.size() + value.size() + 2);
  out.append(ns).push_back('\0');
  out.append(key).push_back('\0');
  out.append(value);
  return out;
}

std::optional<std::pair<std::string, std::string>> SingleLabel(const api::Selector& selector) {
  if (selector.requirements().size() != 1) return std::nullopt;
  const api::Requirement& r = selector.requirements()[0];
  using Op = api::Requirement::Op;
  if ((r.op != Op::kEquals && r.op != Op::kIn) || r.values.size() != 1) return std::nullopt;
  return std::make_pair(r.key, r.values[0]);
}

void NodeInfo::CountTerms(const AffinityTerms& terms, int sign) {
  auto count = [&](TermCount::Kind kind, const std::vector<AffinityTerm>& list) {
    for (const AffinityTerm& t : list) {
      auto it =
          std::find_if(affinity_terms_.begin(), affinity_terms_.end(), [&](const TermCount& c) {
            return c.kind == kind && c.term.weight == t.weight && c.term.canonical == t.canonical;
          });
      if (it == affinity_terms_.end()) {
        if (sign > 0) affinity_terms_.push_back({kind, t, 1});
      } else if ((it->count += sign) <= 0) {
        affinity_terms_.erase(it);
      }
    }
  };
  count(TermCount::kRequiredAffinity, terms.required_affinity);
  count(TermCount::kRequiredAntiAffinity, terms.required_anti_affinity);
  count(TermCount::kPreferredAffinity, terms.preferred_affinity);
  count(TermCount::kPreferredAntiAffinity, terms.preferred_anti_affinity);
}

namespace {

// The process-wide id of a pod's (namespace, labels).
uint64_t LabelGroupId(const api::Pod& pod) {
  std::vector<std::pair<std::string_view, std::string_view>> labels;
  labels.reserve(pod.metadata().labels().size());
  for (const auto& [k, v] : pod.metadata().labels()) labels.emplace_back(k, v);
  std::sort(labels.begin(), labels.end());
  std::string signature(pod.metadata().namespace_());
  for (const auto& [k, v] : labels) {
    signature.push_back('\0');
    signature.append(k).push_back('=');
    signature.append(v);
  }
  static absl::Mutex mu;
  static auto* ids = new absl::flat_hash_map<std::string, uint64_t>();
  absl::MutexLock lock(&mu);
  return ids->try_emplace(std::move(signature), ids->size() + 1).first->second;
}

}  // namespace

void NodeInfo::Group(const PodPtr& pod, int sign) {
  const uint64_t id = LabelGroupId(*pod);
  auto it = std::find_if(label_groups_.begin(), label_groups_.end(),
                         [id](const LabelGroup& g) { return g.id == id; });
  if (it == label_groups_.end()) {
    if (sign < 0) return;
    it = label_groups_.insert(label_groups_.end(), LabelGroup{id, pod, 0, 0});
  }
  it->count += sign;
  if (Terminating(*pod)) it->terminating += sign;
  if (it->count <= 0) label_groups_.erase(it);
}

void NodeInfo::Account(const api::Pod& pod, int sign) {
  auto count = [&](absl::flat_hash_map<std::string, int64_t>& counts) {
    for (const auto& [k, v] : pod.metadata().labels()) {
      auto it = counts.try_emplace(LabelIndexKey(pod.metadata().namespace_(), k, v), 0).first;
      if ((it->second += sign) == 0) counts.erase(it);
    }
  };
  count(label_counts_);
  if (Terminating(pod)) count(terminating_label_counts_);
  for (const auto& [name, milli] : PodRequests(pod)) {
    int64_t& total = requested_[name];
    total += sign * milli;
    if (total == 0) requested_.erase(name);
  }
  Refresh(requested_, req_fast_);
  const NonZero nz = NonZeroRequests(pod);
  non_zero_cpu_ += sign * nz.cpu;
  non_zero_memory_ += sign * nz.memory;
  for (const HostPort& port : HostPortsOf(pod)) {
    if (sign > 0) {
      used_ports_.push_back(port);
    } else if (auto it = std::find(used_ports_.begin(), used_ports_.end(), port);
               it != used_ports_.end()) {
      used_ports_.erase(it);
    }
  }
}

void NodeInfo::AddPod(PodPtr pod) {
  if (Ended(*pod)) return;
  Account(*pod, +1);
  Group(pod, +1);
  const auto& a = pod->spec().affinity();
  if (a.has_pod_affinity() || a.has_pod_anti_affinity()) {
    // A pod whose terms cannot be parsed (stored before validation refused them) counts as
    // having none.
    auto terms = ParseAffinityTerms(*pod);
    auto info = std::make_shared<AffinityPod>(
        AffinityPod{pod, terms.ok() ? std::move(*terms) : AffinityTerms()});
    CountTerms(info->terms, +1);
    if (!info->terms.empty()) pods_with_affinity_.push_back(info);
    if (!info->terms.required_anti_affinity.empty()) {
      pods_with_required_anti_affinity_.push_back(std::move(info));
    }
  }
  pods_.push_back(std::move(pod));
}

bool NodeInfo::RemovePod(const std::string& key) {
  auto it =
      std::find_if(pods_.begin(), pods_.end(), [&](const PodPtr& p) { return PodKey(*p) == key; });
  if (it == pods_.end()) return false;
  Account(**it, -1);
  Group(*it, -1);
  if (AffinityPodPtr gone = Erase(pods_with_affinity_, key)) CountTerms(gone->terms, -1);
  Erase(pods_with_required_anti_affinity_, key);
  pods_.erase(it);
  return true;
}

}  // namespace mkube::scheduler::framework
