// drain: cordon a node, then evict its pods through the eviction subresource (or, with
// --disable-eviction, delete them).
#include <chrono>
#include <iostream>
#include <thread>

#include "absl/strings/str_join.h"
#include "cli/commands.h"
#include "fmt/format.h"
#include "proto/api/core.pb.h"

namespace mkube::cli {

namespace {

// As kubectl: an eviction a disruption budget refuses (429) is tried again every 5 s, until
// the global --timeout (0: no limit).
absl::Status EvictAll(Session& s, const std::vector<const api::Pod*>& pods,
                      const std::string& node_name, const DrainFlags& f,
                      std::chrono::seconds timeout) {
  const auto deadline =
      std::chrono::steady_clock::now() + (timeout.count() ? timeout : std::chrono::hours(24 * 365));
  for (const auto* pod : pods) {
    std::cout << "evicting pod " << pod->metadata().namespace_() << "/" << pod->metadata().name()
              << "\n";
    std::cout.flush();
    api::Eviction ev;
    ev.mutable_metadata()->set_name(pod->metadata().name());
    ev.mutable_metadata()->set_namespace_(pod->metadata().namespace_());
    if (f.grace >= 0) ev.mutable_delete_options()->set_grace_period_seconds(f.grace);
    apiserver::CreateRequest req;
    req.set_resource("pods");
    req.set_namespace_(pod->metadata().namespace_());
    req.set_name(pod->metadata().name());
    req.set_subresource("eviction");
    req.set_object(ev.SerializeAsString());
    for (;;) {
      auto r = s.res().client()->CreateRaw(req);
      if (r.ok() || r.status().code() == absl::StatusCode::kNotFound) break;
      const std::string what = fmt::format("error when evicting pods/\"{}\" -n \"{}\"",
                                           pod->metadata().name(), pod->metadata().namespace_());
      if (r.status().code() != absl::StatusCode::kResourceExhausted) {
        std::cerr << what << ": " << r.status().message() << "\n";
        return Reported();
      }
      if (std::chrono::steady_clock::now() + std::chrono::seconds(5) > deadline) {
        std::cerr << fmt::format(
            "error: unable to drain node \"{}\" due to error: {}: global timeout reached: {}, "
            "continuing command...\n",
            node_name, what, f.timeout);
        return Reported();
      }
      std::cerr << what << " (will retry after 5s): " << r.status().message() << "\n";
      std::this_thread::sleep_for(std::chrono::seconds(5));
    }
  }
  return absl::OkStatus();
}

// --disable-eviction: plain deletes, which no disruption budget holds back.
absl::Status DeleteAll(Session& s, const std::vector<const api::Pod*>& pods, const DrainFlags& f) {
  const api::KindInfo& pods_kind = *api::FindResource("pods");
  for (const auto* pod : pods) {
    auto r = s.res().Delete(pods_kind, pod->metadata().namespace_(), pod->metadata().name(),
                            f.grace >= 0 ? std::optional<int64_t>(f.grace) : std::nullopt, "");
    if (!r.ok() && r.status().code() != absl::StatusCode::kNotFound) {
      std::cerr << fmt::format("error when deleting pods/\"{}\" -n \"{}\": {}\n",
                               pod->metadata().name(), pod->metadata().namespace_(),
                               std::string(r.status().message()));
      return Reported();
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Drain(Session& s, const std::string& node_name, const DrainFlags& f) {
  MKUBE_ASSIGN_OR_RETURN(const auto timeout, DurationFlag(f.timeout, "--timeout"));
  MKUBE_RETURN_IF_ERROR(Cordon(s, {node_name}, true));
  const api::KindInfo& pods_kind = *api::FindResource("pods");
  MKUBE_ASSIGN_OR_RETURN(auto list, s.Worded(s.res().List(pods_kind, "", f.pod_selector,
                                                          "spec.nodeName=" + node_name)));
  std::vector<std::string> daemonset, unmanaged, local_storage;
  std::vector<const api::Pod*> evict;
  for (const auto& p : list.items) {
    const auto& pod = static_cast<const api::Pod&>(*p);
    const std::string id = pod.metadata().namespace_() + "/" + pod.metadata().name();
    if (pod.status().phase() == "Succeeded" || pod.status().phase() == "Failed") {
      evict.push_back(&pod);  // finished: deleted without a fuss
      continue;
    }
    const api::OwnerReference* controller = nullptr;
    for (const auto& o : pod.metadata().owner_references()) {
      if (o.controller()) controller = &o;
    }
    if (controller && controller->kind() == "DaemonSet") {
      daemonset.push_back(id);
      continue;
    }
    if (!controller) unmanaged.push_back(id);
    bool empty_dir = false;
    for (const auto& v : pod.spec().volumes()) empty_dir |= v.has_empty_dir();
    if (empty_dir) local_storage.push_back(id);
    evict.push_back(&pod);
  }
  std::vector<std::string> errors;
  if (!daemonset.empty() && !f.ignore_daemonsets) {
    errors.push_back("cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): " +
                     absl::StrJoin(daemonset, ", "));
  }
  if (!unmanaged.empty() && !f.force) {
    errors.push_back("cannot delete Pods declare no controller (use --force to override): " +
                     absl::StrJoin(unmanaged, ", "));
  }
  if (!local_storage.empty() && !f.delete_emptydir_data) {
    errors.push_back(
        "cannot delete Pods with local storage (use --delete-emptydir-data to override): " +
        absl::StrJoin(local_storage, ", "));
  }
  if (!errors.empty()) {
    std::cerr << fmt::format(
        "error: unable to drain node \"{}\" due to error:{}, continuing command...\n", node_name,
        absl::StrJoin(errors, ", "));
    std::cerr << "There are pending nodes to be drained:\n " << node_name << "\n";
    for (const auto& e : errors) std::cerr << e << "\n";
    return Reported();
  }
  if (!daemonset.empty())
    std::cerr << "Warning: ignoring DaemonSet-managed Pods: " << absl::StrJoin(daemonset, ", ")
              << "\n";
  if (!unmanaged.empty())
    std::cerr << "Warning: deleting Pods that declare no controller: "
              << absl::StrJoin(unmanaged, ", ") << "\n";
  MKUBE_RETURN_IF_ERROR(f.disable_eviction ? DeleteAll(s, evict, f)
                                           : EvictAll(s, evict, node_name, f, timeout));
  for (const auto* pod : evict) {
    if (!WaitGone(s, pods_kind, pod->metadata().namespace_(), pod->metadata().name(), timeout)) {
      std::cerr << fmt::format(
          "error: unable to drain node \"{}\" due to error: global timeout reached: {}, continuing "
          "command...\n",
          node_name, f.timeout);
      return Reported();
    }
    std::cout << "pod/" << pod->metadata().name()
              << (f.disable_eviction ? " deleted\n" : " evicted\n");
    std::cout.flush();
  }
  std::cout << "node/" << node_name << " drained\n";
  return absl::OkStatus();
}

}  // namespace mkube::cli
