// rollout status, history and undo of deployments.
#include <iostream>
#include <map>
#include <thread>

#include "api/codec.h"
#include "api/object.h"
#include "api/printers.h"
#include "cli/commands.h"
#include "fmt/format.h"
#include "google/protobuf/util/message_differencer.h"
#include "proto/api/apps.pb.h"

namespace mkube::cli {
namespace {

// kubectl's rollout status of a deployment: the message, and whether it is done.
absl::StatusOr<std::pair<std::string, bool>> RolloutMessage(const api::Deployment& d) {
  const std::string& name = d.metadata().name();
  const auto& st = d.status();
  if (d.metadata().generation() > st.observed_generation())
    return std::pair<std::string, bool>{"Waiting for deployment spec update to be observed...",
                                        false};
  for (const auto& c : st.conditions()) {
    if (c.type() == "Progressing" && c.reason() == "ProgressDeadlineExceeded") {
      return UserError(
          fmt::format("error: deployment \"{}\" exceeded its progress deadline", name));
    }
  }
  const int32_t desired = d.spec().has_replicas() ? d.spec().replicas() : 1;
  if (st.updated_replicas() < desired) {
    return std::pair<std::string, bool>{
        fmt::format("Waiting for deployment \"{}\" rollout to finish: {} out of {} new replicas "
                    "have been updated...",
                    name, st.updated_replicas(), desired),
        false};
  }
  if (st.replicas() > st.updated_replicas()) {
    return std::pair<std::string, bool>{
        fmt::format("Waiting for deployment \"{}\" rollout to finish: {} old replicas are pending "
                    "termination...",
                    name, st.replicas() - st.updated_replicas()),
        false};
  }
  if (st.available_replicas() < st.updated_replicas()) {
    return std::pair<std::string, bool>{
        fmt::format("Waiting for deployment \"{}\" rollout to finish: {} of {} updated replicas "
                    "are available...",
                    name, st.available_replicas(), st.updated_replicas()),
        false};
  }
  return std::pair<std::string, bool>{
      fmt::format("deployment \"{}\" successfully rolled out", name), true};
}

constexpr char kRevision[] = "deployment.kubernetes.io/revision";

// A deployment's ReplicaSets by revision (the deployment controller numbers them).
absl::StatusOr<std::map<int64_t, api::ReplicaSet>> History(Session& s, const api::Deployment& d) {
  std::map<int64_t, api::ReplicaSet> out;
  MKUBE_ASSIGN_OR_RETURN(auto list, s.Worded(s.res().List(*api::FindResource("replicasets"),
                                                          d.metadata().namespace_(), "", "")));
  for (const auto& r : list.items) {
    const auto& rs = static_cast<const api::ReplicaSet&>(*r);
    bool owned = false;
    for (const auto& o : rs.metadata().owner_references())
      owned |= o.controller() && o.uid() == d.metadata().uid();
    auto it = rs.metadata().annotations().find(kRevision);
    if (!owned || it == rs.metadata().annotations().end()) continue;
    if (int64_t rev = std::atoll(it->second.c_str()); rev > 0) out[rev] = rs;
  }
  return out;
}

absl::StatusOr<const api::Deployment*> DeploymentOf(const Target& t, const MessagePtr& obj) {
  if (t.kind->kind != "Deployment") {
    return UserError(
        fmt::format("error: no history viewer has been implemented for {}", t.kind->kind));
  }
  return static_cast<const api::Deployment*>(obj.get());
}

}  // namespace

absl::Status RolloutStatus(Session& s, const std::vector<std::string>& args,
                           const std::string& timeout_flag) {
  MKUBE_ASSIGN_OR_RETURN(auto targets, ParseTargets(args, true));
  MKUBE_ASSIGN_OR_RETURN(const auto timeout, DurationFlag(timeout_flag, "--timeout"));
  for (const auto& t : targets) {
    if (t.kind->kind != "Deployment")
      return UserError(
          fmt::format("error: no status viewer has been implemented for {}", t.kind->kind));
    const auto deadline =
        std::chrono::steady_clock::now() + (timeout.count() ? timeout : std::chrono::hours(24 * 7));
    std::string last;
    for (;;) {
      MKUBE_ASSIGN_OR_RETURN(auto obj, s.Worded(s.res().Get(*t.kind, s.ns(), t.name)));
      MKUBE_ASSIGN_OR_RETURN(const auto progress,
                             RolloutMessage(static_cast<const api::Deployment&>(*obj)));
      const auto& [msg, done] = progress;
      if (msg != last) {
        std::cout << msg << "\n";
        std::cout.flush();
        last = msg;
      }
      if (done) break;
      if (std::chrono::steady_clock::now() >= deadline)
        return UserError("error: timed out waiting for the condition");
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
  }
  return absl::OkStatus();
}

absl::Status RolloutHistory(Session& s, const std::vector<std::string>& args) {
  MKUBE_ASSIGN_OR_RETURN(auto targets, ParseTargets(args, true));
  for (const auto& t : targets) {
    MKUBE_ASSIGN_OR_RETURN(auto obj, s.Worded(s.res().Get(*t.kind, s.ns(), t.name)));
    MKUBE_ASSIGN_OR_RETURN(const api::Deployment* d, DeploymentOf(t, obj));
    MKUBE_ASSIGN_OR_RETURN(const auto history, History(s, *d));
    std::cout << KindName(*t.kind) << "/" << t.name << " \n";
    api::Table table;
    table.columns = {"REVISION", "CHANGE-CAUSE"};
    for (const auto& [rev, rs] : history) {
      auto cause = rs.metadata().annotations().find("kubernetes.io/change-cause");
      table.rows.push_back({std::to_string(rev),
                            cause == rs.metadata().annotations().end() ? "<none>" : cause->second});
    }
    std::cout << api::RenderTable(table) << "\n";
  }
  return absl::OkStatus();
}

absl::Status RolloutUndo(Session& s, const std::vector<std::string>& args, int64_t to_revision) {
  MKUBE_ASSIGN_OR_RETURN(auto targets, ParseTargets(args, true));
  for (const auto& t : targets) {
    MKUBE_ASSIGN_OR_RETURN(auto obj, s.Worded(s.res().Get(*t.kind, s.ns(), t.name)));
    MKUBE_ASSIGN_OR_RETURN(const api::Deployment* dp, DeploymentOf(t, obj));
    const api::Deployment& d = *dp;
    MKUBE_ASSIGN_OR_RETURN(const auto history, History(s, d));
    int64_t current = 0;
    if (auto it = d.metadata().annotations().find(kRevision);
        it != d.metadata().annotations().end()) {
      current = std::atoll(it->second.c_str());
    }
    const api::ReplicaSet* target = nullptr;
    if (to_revision > 0) {
      auto it = history.find(to_revision);
      if (it == history.end())
        return UserError(
            fmt::format("error: unable to find specified revision {} in history", to_revision));
      target = &it->second;
    } else {
      // The newest revision before the current one (the newest there is, without a current).
      if (current == 0 && !history.empty()) current = history.rbegin()->first;
      for (const auto& [rev, rs] : history) {
        if (rev < current) target = &rs;
      }
      if (!target)
        return UserError(
            fmt::format("error: no rollout history found for deployment \"{}\"", t.name));
    }
    // The ReplicaSet's template without the label the controller adds to tell revisions apart.
    api::PodTemplateSpec tmpl = target->spec().template_();
    tmpl.mutable_metadata()->mutable_labels()->erase("pod-template-hash");
    if (google::protobuf::util::MessageDifferencer::Equals(tmpl, d.spec().template_())) {
      std::cout << KindName(*t.kind) << "/" << t.name
                << " skipped rollback (current template already matches revision "
                << target->metadata().annotations().at(kRevision) << ")\n";
      continue;
    }
    json patch;
    patch["metadata"]["resourceVersion"] = d.metadata().resource_version();
    patch["spec"]["template"] = api::EncodeJson(tmpl);
    MKUBE_RETURN_IF_ERROR(s.Worded(s.res().Patch(*t.kind, s.ns(), t.name, patch.dump())).status());
    std::cout << KindName(*t.kind) << "/" << t.name << " rolled back\n";
  }
  return absl::OkStatus();
}

absl::Status RolloutControl(Session& s, const std::string& verb,
                            const std::vector<std::string>& args) {
  MKUBE_ASSIGN_OR_RETURN(auto targets, ParseTargets(args, true));
  for (const auto& t : targets) {
    MKUBE_ASSIGN_OR_RETURN(auto obj, s.Worded(s.res().Get(*t.kind, s.ns(), t.name)));
    if (t.kind->kind != "Deployment") {
      return UserError(fmt::format("error: {}s are not supported for {}", verb, t.kind->kind));
    }
    const auto& d = static_cast<const api::Deployment&>(*obj);
    const std::string qualified = t.kind->resource + "." + t.kind->group;
    json patch;
    patch["metadata"]["resourceVersion"] = d.metadata().resource_version();
    std::string done;
    if (verb == "pause" || verb == "resume") {
      const bool pause = verb == "pause";
      if (d.spec().paused() == pause) {
        return UserError(fmt::format("error: {} \"{}\" is {}", qualified, t.name,
                                     pause ? "already paused" : "not paused"));
      }
      patch["spec"]["paused"] = pause;
      done = pause ? "paused" : "resumed";
    } else {
      if (d.spec().paused()) {
        return UserError(fmt::format(
            "error: {} \"{}\" is paused: can't restart paused deployment (run rollout resume "
            "first)",
            qualified, t.name));
      }
      // A changed template annotation: a new revision with the same pods.
      patch["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"] =
          api::NowRfc3339();
      done = "restarted";
    }
    MKUBE_RETURN_IF_ERROR(s.Worded(s.res().Patch(*t.kind, s.ns(), t.name, patch.dump())).status());
    std::cout << KindName(*t.kind) << "/" << t.name << " " << done << "\n";
  }
  return absl::OkStatus();
}

}  // namespace mkube::cli
