#include "apiserver/rest/protobuf.h"

#include <memory>

#include "absl/base/casts.h"
#include <map>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/time/time.h"
#include "fmt/format.h"
#include "google/protobuf/unknown_field_set.h"

namespace mkube::apiserver::rest {
namespace {

using google::protobuf::UnknownField;
using google::protobuf::UnknownFieldSet;

// The length-delimited field `number` of `fields` (the last one), or empty.
std::string Bytes(const UnknownFieldSet& fields, int number) {
  std::string out;
  for (int i = 0; i < fields.field_count(); ++i) {
    const UnknownField& f = fields.field(i);
    if (f.number() == number && f.type() == UnknownField::TYPE_LENGTH_DELIMITED) {
      out = f.length_delimited();
    }
  }
  return out;
}

absl::StatusOr<std::unique_ptr<UnknownFieldSet>> Parse(const std::string& bytes, const char* what) {
  auto fields = std::make_unique<UnknownFieldSet>();
  if (!fields->ParseFromString(bytes)) {
    return absl::InvalidArgumentError(std::string("cannot decode the protobuf ") + what);
  }
  return fields;
}

struct K8sField {
  int number;
  const char* name;
  const char* type;
};

const std::map<std::string, std::vector<K8sField>>& K8sFields() {
  static const auto* fields = new std::map<std::string, std::vector<K8sField>>{
#include "apiserver/rest/k8s_fields.inc"
  };
  return *fields;
}

using Json = nlohmann::ordered_json;
using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

// Whether a field's value is its type's zero: Go's encoder writes those too.
bool IsZero(const UnknownField& f) {
  switch (f.type()) {
    case UnknownField::TYPE_VARINT: return f.varint() == 0;
    case UnknownField::TYPE_FIXED32: return f.fixed32() == 0;
    case UnknownField::TYPE_FIXED64: return f.fixed64() == 0;
    case UnknownField::TYPE_LENGTH_DELIMITED: return f.length_delimited().empty();
    default: return true;
  }
}

absl::StatusOr<Json> Message(const std::string& bytes, const std::string& k8s_type,
                             const Descriptor* ours, const std::string& path);

// A value of Kubernetes type `type` from its wire field.
absl::StatusOr<Json> Value(const UnknownField& f, const std::string& type,
                           const FieldDescriptor* ours, const std::string& path) {
  const bool delimited = f.type() == UnknownField::TYPE_LENGTH_DELIMITED;
  if (type == "string") return delimited ? Json(f.length_delimited()) : Json();
  if (type == "bytes") return Json(absl::Base64Escape(f.length_delimited()));
  if (type == "bool") return Json(f.varint() != 0);
  if (type == "int32") return Json(static_cast<int32_t>(f.varint()));
  if (type == "int64") return Json(static_cast<int64_t>(f.varint()));
  if (type == "double") return Json(absl::bit_cast<double>(f.fixed64()));
  if (!delimited) return absl::InvalidArgumentError(fmt::format("{}: malformed protobuf", path));
  auto inner = Parse(f.length_delimited(), "field");
  if (!inner.ok()) return inner.status();
  const UnknownFieldSet& in = **inner;
  auto varint = [&](int n) -> int64_t {
    for (int i = 0; i < in.field_count(); ++i) {
      if (in.field(i).number() == n && in.field(i).type() == UnknownField::TYPE_VARINT) {
        return static_cast<int64_t>(in.field(i).varint());
      }
    }
    return 0;
  };
  if (type == "Quantity") return Json(Bytes(in, 1));
  if (type == "Time" || type == "MicroTime") {
    const absl::Time t = absl::FromUnixSeconds(varint(1)) + absl::Nanoseconds(varint(2));
    return Json(absl::FormatTime(type == "Time" ? "%Y-%m-%dT%H:%M:%SZ" : "%Y-%m-%dT%H:%M:%E6SZ",
                                 t, absl::UTCTimeZone()));
  }
  if (type == "IntOrString") {
    if (varint(1) == 1) return Json(Bytes(in, 3));
    return Json(static_cast<int32_t>(varint(2)));
  }
  if (type.rfind("map:", 0) == 0) {  // one entry: key 1, value 2
    std::string value = Bytes(in, 2);
    if (type == "map:Quantity") {
      auto quantity = Parse(value, "quantity");
      if (!quantity.ok()) return quantity.status();
      value = Bytes(**quantity, 1);
    }
    return Json{{Bytes(in, 1), value}};
  }
  if (!ours || !ours->message_type()) {
    return absl::InvalidArgumentError(fmt::format("{}: a {} is not a value mkube models", path, type));
  }
  return Message(f.length_delimited(), type, ours->message_type(), path);
}

absl::StatusOr<Json> Message(const std::string& bytes, const std::string& k8s_type,
                             const Descriptor* ours, const std::string& path) {
  auto table = K8sFields().find(k8s_type);
  if (table == K8sFields().end()) {
    return absl::InvalidArgumentError(fmt::format("{}: a {} is not a value mkube models", path, k8s_type));
  }
  auto parsed = Parse(bytes, k8s_type.c_str());
  if (!parsed.ok()) return parsed.status();
  Json out = Json::object();
  for (int i = 0; i < (*parsed)->field_count(); ++i) {
    const UnknownField& f = (*parsed)->field(i);
    const K8sField* k = nullptr;
    for (const auto& e : table->second) {
      if (e.number == f.number()) k = &e;
    }
    if (IsZero(f)) continue;  // what JSON would leave out
    const std::string field_path = path.empty() ? (k ? k->name : "?") : path + "." + (k ? k->name : "?");
    const FieldDescriptor* mine = nullptr;
    for (int j = 0; k && j < ours->field_count(); ++j) {
      if (ours->field(j)->json_name() == k->name) mine = ours->field(j);
    }
    if (!k || !mine) {
      return absl::InvalidArgumentError(fmt::format("unknown field \"{}\"", field_path));
    }
    auto v = Value(f, k->type, mine, field_path);
    if (!v.ok()) return v.status();
    if (std::string(k->type).rfind("map:", 0) == 0) {
      for (auto& [key, val] : v->items()) out[k->name][key] = std::move(val);
    } else if (mine->is_repeated()) {
      out[k->name].push_back(std::move(*v));
    } else {
      out[k->name] = std::move(*v);
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<Json> ObjectJsonFromProtobuf(const std::string& raw, const Descriptor* descriptor) {
  return Message(raw, descriptor->name(), descriptor, "");
}

absl::StatusOr<ProtobufObject> UnwrapProtobuf(const std::string& body) {
  static const std::string kMagic("k8s\0", 4);
  if (body.compare(0, kMagic.size(), kMagic) != 0) {
    return absl::InvalidArgumentError("a protobuf body must start with the magic \"k8s\\0\"");
  }
  auto unknown = Parse(body.substr(kMagic.size()), "envelope");
  if (!unknown.ok()) return unknown.status();
  auto type_meta = Parse(Bytes(**unknown, 1), "type meta");
  if (!type_meta.ok()) return type_meta.status();
  return ProtobufObject{Bytes(**type_meta, 1), Bytes(**type_meta, 2), Bytes(**unknown, 2)};
}

absl::StatusOr<nlohmann::ordered_json> AccessReviewSpecFromProtobuf(const std::string& raw) {
  auto review = Parse(raw, "SelfSubjectAccessReview");
  if (!review.ok()) return review.status();
  auto spec = Parse(Bytes(**review, 2), "SelfSubjectAccessReview spec");
  if (!spec.ok()) return spec.status();
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  if (std::string ra = Bytes(**spec, 1); !ra.empty()) {
    auto attrs = Parse(ra, "resourceAttributes");
    if (!attrs.ok()) return attrs.status();
    const char* names[] = {"", "namespace", "verb", "group", "version", "resource", "subresource",
                           "name"};
    auto& j = out["resourceAttributes"] = nlohmann::ordered_json::object();
    for (int n = 1; n <= 7; ++n) {
      if (std::string v = Bytes(**attrs, n); !v.empty()) j[names[n]] = v;
    }
  } else if (std::string nra = Bytes(**spec, 2); !nra.empty()) {
    auto attrs = Parse(nra, "nonResourceAttributes");
    if (!attrs.ok()) return attrs.status();
    out["nonResourceAttributes"] = {{"path", Bytes(**attrs, 1)}, {"verb", Bytes(**attrs, 2)}};
  }
  return out;
}

}  // namespace mkube::apiserver::rest
