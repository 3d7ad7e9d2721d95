#include "api/strategy.h"

#include <algorithm>
#include <vector>

#include "api/codec.h"
#include "api/defaults.h"
#include "api/object.h"
#include "api/patch.h"
#include "api/quantity.h"
#include "base/status.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "proto/api/apps.pb.h"
#include "proto/api/batch.pb.h"
#include "proto/api/core.pb.h"

namespace mkube::api {

std::string QosClass(const PodSpec& spec) {
  bool any = false, guaranteed = true;
  // A quantity of zero counts as none, as in Kubernetes' GetPodQOS.
  auto amount = [](const auto& map, const char* r) -> int64_t {
    auto it = map.find(r);
    if (it == map.end()) return 0;
    auto q = Quantity::Parse(it->second);
    return q.ok() && q->milli() > 0 ? q->milli() : 0;
  };
  auto look = [&](const Container& c) {
    for (const char* r : {"cpu", "memory"}) {
      const int64_t limit = amount(c.resources().limits(), r);
      const int64_t request = amount(c.resources().requests(), r);
      if (limit > 0 || request > 0) any = true;
      // A request left out defaults to the limit; one of zero is none, and so differs.
      const bool asked = c.resources().requests().contains(r);
      if (limit == 0 || (asked && request != limit)) guaranteed = false;
    }
  };
  for (const auto& c : spec.init_containers()) look(c);
  for (const auto& c : spec.containers()) look(c);
  if (!any) return "BestEffort";
  return guaranteed ? "Guaranteed" : "Burstable";
}

void PrepareForCreate(google::protobuf::Message* obj, const std::string& now) {
  if (auto* pod = dynamic_cast<Pod*>(obj)) {
    pod->clear_status();
    pod->mutable_status()->set_phase("Pending");
    pod->mutable_status()->set_qos_class(QosClass(pod->spec()));
  } else if (auto* ns = dynamic_cast<Namespace*>(obj)) {
    ns->mutable_status()->set_phase("Active");
  } else if (auto* cj = dynamic_cast<CronJob*>(obj)) {
    cj->clear_status();
  }
  ObjectMeta* meta = MutableMetaOf(obj);
  meta->set_uid(NewUid());
  meta->set_creation_timestamp(now);
  meta->set_generation(1);
  meta->clear_deletion_timestamp();
  meta->clear_deletion_grace_period_seconds();
  if (auto* job = dynamic_cast<Job*>(obj)) {
    job->clear_status();
    // Kubernetes' generated selector: the Job's own uid, on the selector and the template.
    if (!job->spec().manual_selector()) {
      auto* labels = job->mutable_spec()->mutable_template_()->mutable_metadata()->mutable_labels();
      for (const char* prefix : {"batch.kubernetes.io/", ""}) {
        (*labels)[std::string(prefix) + "controller-uid"] = meta->uid();
        (*labels)[std::string(prefix) + "job-name"] = meta->name();
      }
      job->mutable_spec()->mutable_selector()->clear_match_expressions();
      auto* match = job->mutable_spec()->mutable_selector()->mutable_match_labels();
      match->clear();
      (*match)["batch.kubernetes.io/controller-uid"] = meta->uid();
    }
  }
}

void PrepareForUpdate(const google::protobuf::Message& current, bool status_only, Object* obj) {
  if (status_only) {
    std::unique_ptr<google::protobuf::Message> merged(current.New());
    merged->CopyFrom(current);
    CopyPart(*obj->message, merged.get(), "status");
    obj->message = std::move(merged);
    return;
  }
  const ObjectMeta& cur = MetaOf(current);
  ObjectMeta* meta = MutableMetaOf(obj->message.get());
  meta->set_uid(cur.uid());
  meta->set_creation_timestamp(cur.creation_timestamp());
  meta->set_namespace_(cur.namespace_());
  meta->set_deletion_timestamp(cur.deletion_timestamp());
  // An update that carries no managedFields keeps the object's (as Kubernetes does when they
  // are left out); their changes are recorded by the writer's field manager.
  if (meta->managed_fields().empty()) *meta->mutable_managed_fields() = cur.managed_fields();
  if (cur.has_deletion_grace_period_seconds()) {
    meta->set_deletion_grace_period_seconds(cur.deletion_grace_period_seconds());
  }
  CopyPart(current, obj->message.get(), "status");
  SetTypeMeta(obj->message.get(), obj->info->api_version(), obj->info->kind);
  Default(*obj);
  meta->set_generation(cur.generation() + (SameSpec(*obj->message, current) ? 0 : 1));
}

absl::StatusOr<std::unique_ptr<google::protobuf::Message>> ApplyPatch(
    const google::protobuf::Message& current, const std::string& type, const std::string& patch) {
  std::optional<PatchType> t = PatchTypeNamed(type);
  if (!t) return absl::InvalidArgumentError(fmt::format("unknown patch type \"{}\"", type));
  MKUBE_ASSIGN_OR_RETURN(PatchJson doc, ApplyPatch(EncodeJson(current), *t, patch));
  std::unique_ptr<google::protobuf::Message> patched(current.New());
  MKUBE_RETURN_IF_ERROR(DecodeNode(YAML::Load(doc.dump()), patched.get()));
  return patched;
}

std::optional<int64_t> GracefulDeletion(const google::protobuf::Message& obj,
                                        std::optional<int64_t> requested) {
  const auto* pod = dynamic_cast<const Pod*>(&obj);
  if (!pod || pod->spec().node_name().empty()) return std::nullopt;
  const int64_t grace = requested.value_or(pod->spec().termination_grace_period_seconds());
  if (grace <= 0) return std::nullopt;
  return grace;
}

absl::StatusOr<DeleteDecision> DecideDelete(const google::protobuf::Message& current,
                                            std::optional<int64_t> requested,
                                            const std::string& propagation,
                                            const std::string& now) {
  std::string policy = propagation;
  if (policy.empty()) policy = current.GetDescriptor()->name() == "Job" ? "Orphan" : "Background";
  if (policy != "Orphan" && policy != "Background" && policy != "Foreground") {
    return absl::InvalidArgumentError(fmt::format(
        "propagationPolicy: Unsupported value: \"{}\": supported values: \"Foreground\", "
        "\"Background\", \"Orphan\"",
        propagation));
  }
  const ObjectMeta& meta = MetaOf(current);
  std::vector<std::string> finalizers(meta.finalizers().begin(), meta.finalizers().end());
  auto drop = [&finalizers](const char* f) {
    finalizers.erase(std::remove(finalizers.begin(), finalizers.end(), f), finalizers.end());
  };
  auto add = [&finalizers](const char* f) {
    if (std::find(finalizers.begin(), finalizers.end(), f) == finalizers.end()) {
      finalizers.push_back(f);
    }
  };
  if (policy == "Orphan") {
    drop(kForegroundFinalizer);
    add(kOrphanFinalizer);
  } else if (policy == "Foreground") {
    drop(kOrphanFinalizer);
    add(kForegroundFinalizer);
  }
  const std::optional<int64_t> grace = GracefulDeletion(current, requested);
  const bool deleting = !meta.deletion_timestamp().empty();
  if (!grace && finalizers.empty()) return DeleteDecision{};
  const int64_t grace_seconds = grace.value_or(0);
  const bool same_finalizers =
      std::equal(finalizers.begin(), finalizers.end(), meta.finalizers().begin(),
                 meta.finalizers().end());
  // A second delete may shorten a grace period, or change what propagation asks for.
  if (deleting && same_finalizers && grace_seconds >= meta.deletion_grace_period_seconds()) {
    return DeleteDecision{.unchanged = true};
  }
  DeleteDecision d;
  d.marked.reset(current.New());
  d.marked->CopyFrom(current);
  ObjectMeta* m = MutableMetaOf(d.marked.get());
  if (!deleting) m->set_deletion_timestamp(now);
  if (!deleting || grace_seconds < meta.deletion_grace_period_seconds()) {
    m->set_deletion_grace_period_seconds(grace_seconds);
  }
  m->clear_finalizers();
  for (const auto& f : finalizers) m->add_finalizers(f);
  return d;
}

bool ReadyToRemove(const google::protobuf::Message& obj) {
  const ObjectMeta& meta = MetaOf(obj);
  return !meta.deletion_timestamp().empty() && meta.finalizers().empty() &&
         meta.deletion_grace_period_seconds() == 0;
}

absl::Status CheckFinalizers(const google::protobuf::Message& current,
                             const google::protobuf::Message& updated) {
  const ObjectMeta& cur = MetaOf(current);
  if (cur.deletion_timestamp().empty()) return absl::OkStatus();
  std::vector<std::string> added;
  for (const auto& f : MetaOf(updated).finalizers()) {
    if (std::find(cur.finalizers().begin(), cur.finalizers().end(), f) == cur.finalizers().end()) {
      added.push_back("\"" + f + "\"");
    }
  }
  if (added.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(fmt::format(
      "{} \"{}\" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if "
      "the object is being deleted, found new finalizers []string{{{}}}",
      current.GetDescriptor()->name(), cur.name(), fmt::join(added, ", ")));
}

void AddDefaultTolerations(Pod* pod, int64_t not_ready_seconds, int64_t unreachable_seconds) {
  bool not_ready = false, unreachable = false;
  for (const auto& t : pod->spec().tolerations()) {
    if (!t.effect().empty() && t.effect() != "NoExecute") continue;
    const bool any_key = t.key().empty() && t.operator_() == "Exists";
    if (any_key || t.key() == "node.kubernetes.io/not-ready") not_ready = true;
    if (any_key || t.key() == "node.kubernetes.io/unreachable") unreachable = true;
  }
  auto add = [pod](const char* key, int64_t seconds) {
    Toleration* t = pod->mutable_spec()->add_tolerations();
    t->set_key(key);
    t->set_operator_("Exists");
    t->set_effect("NoExecute");
    t->set_toleration_seconds(seconds);
  };
  if (!not_ready) add("node.kubernetes.io/not-ready", not_ready_seconds);
  if (!unreachable) add("node.kubernetes.io/unreachable", unreachable_seconds);
}

void ApplyBinding(const Binding& binding, Pod* pod, const std::string& now) {
  pod->mutable_spec()->set_node_name(binding.target().name());
  for (const auto& [k, v] : binding.metadata().annotations()) {
    (*pod->mutable_metadata()->mutable_annotations())[k] = v;
  }
  Condition* scheduled = nullptr;
  for (auto& c : *pod->mutable_status()->mutable_conditions()) {
    if (c.type() == "PodScheduled") scheduled = &c;
  }
  if (!scheduled) scheduled = pod->mutable_status()->add_conditions();
  if (scheduled->status() != "True") scheduled->set_last_transition_time(now);
  scheduled->set_type("PodScheduled");
  scheduled->set_status("True");
  scheduled->clear_reason();
  scheduled->clear_message();
}

}  // namespace mkube::api
