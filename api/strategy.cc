#include "api/strategy.h"

#include "api/codec.h"
#include "api/defaults.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "api/object.h"
#include "proto/api/core.pb.h"

namespace mkube::api {

void PrepareForCreate(google::protobuf::Message* obj, const std::string& now) {
  if (auto* pod = dynamic_cast<Pod*>(obj)) {
    pod->clear_status();
    pod->mutable_status()->set_phase("Pending");
  } else if (auto* ns = dynamic_cast<Namespace*>(obj)) {
    ns->mutable_status()->set_phase("Active");
  }
  ObjectMeta* meta = MutableMetaOf(obj);
  meta->set_uid(NewUid());
  meta->set_creation_timestamp(now);
  meta->set_generation(1);
  meta->clear_deletion_timestamp();
  meta->clear_deletion_grace_period_seconds();
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
  if (cur.has_deletion_grace_period_seconds()) {
    meta->set_deletion_grace_period_seconds(cur.deletion_grace_period_seconds());
  }
  CopyPart(current, obj->message.get(), "status");
  SetTypeMeta(obj->message.get(), obj->info->api_version(), obj->info->kind);
  Default(*obj);
  meta->set_generation(cur.generation() + (SameSpec(*obj->message, current) ? 0 : 1));
}

absl::StatusOr<std::unique_ptr<google::protobuf::Message>> ApplyMergePatch(
    const google::protobuf::Message& current, const std::string& merge_patch) {
  nlohmann::json patch = nlohmann::json::parse(merge_patch, nullptr, false);
  if (patch.is_discarded()) {
    return absl::InvalidArgumentError("invalid JSON merge patch: the body is not JSON");
  }
  nlohmann::json doc = nlohmann::json::parse(EncodeJson(current).dump());
  doc.merge_patch(patch);
  std::unique_ptr<google::protobuf::Message> patched(current.New());
  if (auto st = DecodeNode(YAML::Load(doc.dump()), patched.get()); !st.ok()) return st;
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
