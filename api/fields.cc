#include "api/fields.h"

#include <algorithm>
#include <cctype>

#include "fmt/format.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/reflection.h"

namespace mkube::api {
namespace {

using google::protobuf::FieldDescriptor;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

const FieldDescriptor* ByJsonName(const google::protobuf::Descriptor* d, std::string_view name) {
  for (int i = 0; i < d->field_count(); ++i) {
    if (d->field(i)->json_name() == name) return d->field(i);
  }
  return nullptr;
}

// The fields each kind can be selected by, as in Kubernetes.
std::vector<std::string> Supported(const KindInfo& kind) {
  std::vector<std::string> f = {"metadata.name", "metadata.namespace"};
  if (kind.kind == "Pod") {
    f.insert(f.end(), {"spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
                       "spec.serviceAccountName", "spec.hostNetwork", "status.phase",
                       "status.podIP", "status.nominatedNodeName"});
  } else if (kind.kind == "Node") {
    f.push_back("spec.unschedulable");
  } else if (kind.kind == "Event") {
    f.insert(f.end(), {"involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                       "involvedObject.uid", "involvedObject.apiVersion",
                       "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason",
                       "reportingComponent", "source", "type"});
  } else if (kind.kind == "Namespace") {
    f.push_back("status.phase");
  } else if (kind.kind == "ReplicaSet" || kind.kind == "ReplicationController") {
    f.push_back("status.replicas");
  }
  return f;
}

}  // namespace

std::optional<std::string> FieldValue(const google::protobuf::Message& obj,
                                      std::string_view path) {
  const google::protobuf::Message* msg = &obj;
  while (true) {
    const size_t dot = path.find('.');
    std::string_view name = path.substr(0, dot);
    const FieldDescriptor* f = ByJsonName(msg->GetDescriptor(), name);
    if (!f || f->is_repeated()) return std::nullopt;
    const auto* r = msg->GetReflection();
    if (dot == std::string_view::npos) {
      switch (f->cpp_type()) {
        case FieldDescriptor::CPPTYPE_STRING: return r->GetString(*msg, f);
        case FieldDescriptor::CPPTYPE_INT32: return std::to_string(r->GetInt32(*msg, f));
        case FieldDescriptor::CPPTYPE_INT64: return std::to_string(r->GetInt64(*msg, f));
        case FieldDescriptor::CPPTYPE_BOOL: return r->GetBool(*msg, f) ? "true" : "false";
        default: return std::nullopt;
      }
    }
    if (f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) return std::nullopt;
    msg = &r->GetMessage(*msg, f);
    path = path.substr(dot + 1);
  }
}

absl::StatusOr<FieldSelector> FieldSelector::Parse(std::string_view text) {
  FieldSelector sel;
  text = Trim(text);
  if (text.empty()) return sel;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    std::string_view part =
        Trim(text.substr(start, comma == std::string_view::npos ? text.npos : comma - start));
    Term t;
    size_t op = part.find("!=");
    size_t skip = 2;
    if (op != std::string_view::npos) {
      t.equals = false;
    } else if ((op = part.find("==")) != std::string_view::npos) {
    } else if ((op = part.find('=')) != std::string_view::npos) {
      skip = 1;
    } else {
      return absl::InvalidArgumentError(
          fmt::format("invalid selector: '{}'; can't understand '{}'", text, part));
    }
    t.field = std::string(Trim(part.substr(0, op)));
    t.value = std::string(Trim(part.substr(op + skip)));
    if (t.field.empty()) {
      return absl::InvalidArgumentError(
          fmt::format("invalid selector: '{}'; can't understand '{}'", text, part));
    }
    sel.terms_.push_back(std::move(t));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return sel;
}

absl::Status FieldSelector::CheckSupported(const KindInfo& kind) const {
  const auto supported = Supported(kind);
  for (const auto& t : terms_) {
    if (std::find(supported.begin(), supported.end(), t.field) == supported.end()) {
      return absl::InvalidArgumentError(
          fmt::format("field label not supported: {}", t.field));
    }
  }
  return absl::OkStatus();
}

bool FieldSelector::Matches(const google::protobuf::Message& obj) const {
  for (const auto& t : terms_) {
    std::optional<std::string> v = FieldValue(obj, t.field);
    const bool equal = v.has_value() && *v == t.value;
    if (equal != t.equals) return false;
  }
  return true;
}

std::string FieldSelector::String() const {
  std::string out;
  for (const auto& t : terms_) {
    if (!out.empty()) out += ",";
    out += t.field + (t.equals ? "=" : "!=") + t.value;
  }
  return out;
}

}  // namespace mkube::api
