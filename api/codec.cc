#include "api/codec.h"

#include <charconv>
#include <map>
#include <mutex>

#include "base/status.h"
#include "fmt/format.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/reflection.h"

namespace mkube::api {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

constexpr char kIntOrString[] = "mkube.api.IntOrString";
constexpr char kFieldsV1[] = "mkube.api.FieldsV1";

std::string Join(const std::string& path, std::string_view field) {
  return path.empty() ? std::string(field) : fmt::format("{}.{}", path, field);
}

absl::Status TypeError(const std::string& path, std::string_view want, const YAML::Node& node) {
  std::string got;
  switch (node.Type()) {
    case YAML::NodeType::Map: got = "a map"; break;
    case YAML::NodeType::Sequence: got = "a list"; break;
    case YAML::NodeType::Scalar: got = fmt::format("\"{}\"", node.Scalar()); break;
    default: got = "nothing"; break;
  }
  return absl::InvalidArgumentError(fmt::format("{}: expected {}, got {}", path, want, got));
}

// Plain (unquoted) scalars carry YAML's implicit types; quoted ones are always strings.
bool Plain(const YAML::Node& node) { return node.Tag() == "?"; }

bool LooksNumeric(const std::string& s) {
  if (s.empty()) return false;
  double d;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
  return ec == std::errc() && p == s.data() + s.size();
}

bool LooksBool(const std::string& s) {
  return s == "true" || s == "false" || s == "True" || s == "False" || s == "TRUE" ||
         s == "FALSE";
}

bool LooksNull(const std::string& s) { return s == "null" || s == "~" || s == "Null" || s == "NULL"; }

template <typename T>
bool ParseInt(const std::string& s, T* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

// Field lookup by JSON name, built once per message type.
const FieldDescriptor* FindField(const Descriptor* d, const std::string& name) {
  static std::mutex mu;
  static std::map<const Descriptor*, std::map<std::string, const FieldDescriptor*, std::less<>>>
      cache;
  std::lock_guard<std::mutex> lock(mu);
  auto [it, fresh] = cache.try_emplace(d);
  if (fresh) {
    for (int i = 0; i < d->field_count(); ++i) it->second[d->field(i)->json_name()] = d->field(i);
  }
  auto f = it->second.find(name);
  return f == it->second.end() ? nullptr : f->second;
}

absl::Status DecodeIntOrString(const YAML::Node& node, Message* msg, const std::string& path) {
  if (!node.IsScalar()) return TypeError(path, "a number or a string", node);
  const Reflection* r = msg->GetReflection();
  const Descriptor* d = msg->GetDescriptor();
  int32_t v;
  if (Plain(node) && ParseInt(node.Scalar(), &v)) {
    r->SetInt32(msg, d->FindFieldByName("int_value"), v);
  } else {
    r->SetString(msg, d->FindFieldByName("string_value"), node.Scalar());
  }
  return absl::OkStatus();
}

// A FieldsV1 set: maps of maps, each leaf an empty map.
absl::StatusOr<nlohmann::ordered_json> FieldsTree(const YAML::Node& node, const std::string& path) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  if (node.IsNull()) return out;
  if (!node.IsMap()) return TypeError(path, "a map", node);
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) return TypeError(path, "a field name", kv.first);
    MKUBE_ASSIGN_OR_RETURN(out[kv.first.Scalar()],
                           FieldsTree(kv.second, Join(path, kv.first.Scalar())));
  }
  return out;
}

absl::Status DecodeFieldsV1(const YAML::Node& node, Message* msg, const std::string& path) {
  MKUBE_ASSIGN_OR_RETURN(auto tree, FieldsTree(node, path));
  msg->GetReflection()->SetString(msg, msg->GetDescriptor()->FindFieldByName("json"), tree.dump());
  return absl::OkStatus();
}

// Decodes one scalar into a singular or repeated (add) field.
absl::Status DecodeScalar(const YAML::Node& node, Message* msg, const FieldDescriptor* f,
                          const std::string& path, bool add) {
  const Reflection* r = msg->GetReflection();
  if (!node.IsScalar()) return TypeError(path, f->type() == FieldDescriptor::TYPE_STRING ? "a string" : "a scalar", node);
  const std::string& s = node.Scalar();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_STRING:
      if (Plain(node) && (LooksBool(s) || LooksNull(s))) return TypeError(path, "a string", node);
      if (Plain(node) && LooksNumeric(s) && f->type() == FieldDescriptor::TYPE_STRING) {
        return TypeError(path, "a string", node);
      }
      add ? r->AddString(msg, f, s) : r->SetString(msg, f, s);
      return absl::OkStatus();
    case FieldDescriptor::CPPTYPE_INT32: {
      int32_t v;
      if (!Plain(node) || !ParseInt(s, &v)) return TypeError(path, "an integer", node);
      add ? r->AddInt32(msg, f, v) : r->SetInt32(msg, f, v);
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_INT64: {
      int64_t v;
      if (!Plain(node) || !ParseInt(s, &v)) return TypeError(path, "an integer", node);
      add ? r->AddInt64(msg, f, v) : r->SetInt64(msg, f, v);
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_BOOL: {
      if (!Plain(node) || !LooksBool(s)) return TypeError(path, "true or false", node);
      const bool v = s[0] == 't' || s[0] == 'T';
      add ? r->AddBool(msg, f, v) : r->SetBool(msg, f, v);
      return absl::OkStatus();
    }
    default:
      return absl::InternalError(fmt::format("{}: unsupported field type", path));
  }
}

absl::Status DecodeMapField(const YAML::Node& node, Message* msg, const FieldDescriptor* f,
                            const std::string& path) {
  if (!node.IsMap()) return TypeError(path, "a map", node);
  const Reflection* r = msg->GetReflection();
  const FieldDescriptor* key_f = f->message_type()->map_key();
  const FieldDescriptor* value_f = f->message_type()->map_value();
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    const std::string sub = fmt::format("{}[{}]", path, key);
    Message* entry = r->AddMessage(msg, f);
    entry->GetReflection()->SetString(entry, key_f, key);
    if (value_f->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
      // Quantities and label values: any scalar, as written ("cpu: 1" means "1").
      if (!kv.second.IsScalar()) return TypeError(sub, "a string", kv.second);
      entry->GetReflection()->SetString(entry, value_f, kv.second.Scalar());
    } else if (auto st = DecodeScalar(kv.second, entry, value_f, sub, false); !st.ok()) {
      return st;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<YAML::Node>> ParseDocuments(std::string_view text) {
  std::vector<YAML::Node> docs;
  try {
    for (auto& doc : YAML::LoadAll(std::string(text))) {
      if (doc.IsNull()) continue;
      docs.push_back(doc);
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(fmt::format("invalid YAML at line {}, column {}: {}",
                                                  e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  return docs;
}

absl::Status DecodeNode(const YAML::Node& node, Message* msg, const std::string& path,
                        std::vector<std::string>* unknown) {
  const Descriptor* d = msg->GetDescriptor();
  if (d->full_name() == kIntOrString) return DecodeIntOrString(node, msg, path);
  if (d->full_name() == kFieldsV1) return DecodeFieldsV1(node, msg, path);
  if (node.IsNull()) return absl::OkStatus();
  if (!node.IsMap()) return TypeError(path.empty() ? "object" : path, "a map", node);
  const Reflection* r = msg->GetReflection();
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) return TypeError(path, "a field name", kv.first);
    const std::string name = kv.first.Scalar();
    const std::string field_path = Join(path, name);
    const FieldDescriptor* f = FindField(d, name);
    if (!f && unknown) {
      unknown->push_back(field_path);
      continue;
    }
    if (!f) return absl::InvalidArgumentError(fmt::format("unknown field \"{}\"", field_path));
    const YAML::Node& value = kv.second;
    if (value.IsNull()) continue;  // null means unset, as in Kubernetes
    if (f->is_map()) {
      MKUBE_RETURN_IF_ERROR(DecodeMapField(value, msg, f, field_path));
    } else if (f->is_repeated()) {
      if (!value.IsSequence()) return TypeError(field_path, "a list", value);
      for (size_t i = 0; i < value.size(); ++i) {
        const std::string item = fmt::format("{}[{}]", field_path, i);
        absl::Status st;
        if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
          st = DecodeNode(value[i], r->AddMessage(msg, f), item, unknown);
        } else {
          st = DecodeScalar(value[i], msg, f, item, true);
        }
        if (!st.ok()) return st;
      }
    } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      MKUBE_RETURN_IF_ERROR(DecodeNode(value, r->MutableMessage(msg, f), field_path, unknown));
    } else if (auto st = DecodeScalar(value, msg, f, field_path, false); !st.ok()) {
      return st;
    }
  }
  return absl::OkStatus();
}

namespace {

nlohmann::ordered_json ScalarJson(const Message& msg, const FieldDescriptor* f, int index) {
  const Reflection* r = msg.GetReflection();
  const bool rep = index >= 0;
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_STRING:
      return rep ? r->GetRepeatedString(msg, f, index) : r->GetString(msg, f);
    case FieldDescriptor::CPPTYPE_INT32:
      return rep ? r->GetRepeatedInt32(msg, f, index) : r->GetInt32(msg, f);
    case FieldDescriptor::CPPTYPE_INT64:
      return rep ? r->GetRepeatedInt64(msg, f, index) : r->GetInt64(msg, f);
    case FieldDescriptor::CPPTYPE_BOOL:
      return rep ? r->GetRepeatedBool(msg, f, index) : r->GetBool(msg, f);
    default:
      return nullptr;
  }
}

}  // namespace

nlohmann::ordered_json EncodeJson(const Message& msg) {
  const Descriptor* d = msg.GetDescriptor();
  const Reflection* r = msg.GetReflection();
  if (d->full_name() == kIntOrString) {
    const FieldDescriptor* i = d->FindFieldByName("int_value");
    if (r->HasField(msg, i)) return r->GetInt32(msg, i);
    return r->GetString(msg, d->FindFieldByName("string_value"));
  }
  if (d->full_name() == kFieldsV1) {
    auto tree = nlohmann::ordered_json::parse(r->GetString(msg, d->FindFieldByName("json")),
                                              nullptr, false);
    return tree.is_discarded() ? nlohmann::ordered_json::object() : tree;
  }
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  std::vector<const FieldDescriptor*> fields;
  r->ListFields(msg, &fields);  // set fields only, in field-number order
  for (const FieldDescriptor* f : fields) {
    const std::string& name = f->json_name();
    if (f->is_map()) {
      // Sorted keys, so output is stable.
      std::map<std::string, nlohmann::ordered_json> sorted;
      const FieldDescriptor* key_f = f->message_type()->map_key();
      const FieldDescriptor* value_f = f->message_type()->map_value();
      for (int i = 0; i < r->FieldSize(msg, f); ++i) {
        const Message& entry = r->GetRepeatedMessage(msg, f, i);
        sorted[entry.GetReflection()->GetString(entry, key_f)] = ScalarJson(entry, value_f, -1);
      }
      nlohmann::ordered_json m = nlohmann::ordered_json::object();
      for (auto& [k, v] : sorted) m[k] = std::move(v);
      out[name] = std::move(m);
    } else if (f->is_repeated()) {
      nlohmann::ordered_json list = nlohmann::ordered_json::array();
      for (int i = 0; i < r->FieldSize(msg, f); ++i) {
        if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
          list.push_back(EncodeJson(r->GetRepeatedMessage(msg, f, i)));
        } else {
          list.push_back(ScalarJson(msg, f, i));
        }
      }
      out[name] = std::move(list);
    } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      out[name] = EncodeJson(r->GetMessage(msg, f));
    } else {
      out[name] = ScalarJson(msg, f, -1);
    }
  }
  return out;
}

std::string ToJson(const Message& msg, bool pretty) {
  return EncodeJson(msg).dump(pretty ? 4 : -1);
}

namespace {

// One scalar as YAML: strings that would read back as another type, or span lines, are
// double-quoted; yaml-cpp decides the rest of the quoting.
std::string YamlScalar(const nlohmann::ordered_json& j) {
  if (j.is_object()) return "{}";
  if (j.is_array()) return "[]";
  if (j.is_boolean()) return j.get<bool>() ? "true" : "false";
  if (j.is_null()) return "null";
  if (!j.is_string()) return j.dump();
  const std::string& s = j.get_ref<const std::string&>();
  YAML::Emitter e;
  if (s.empty() || LooksNumeric(s) || LooksBool(s) || LooksNull(s) || s.find('\n') != std::string::npos) {
    e << YAML::DoubleQuoted << s;
  } else {
    e << s;
  }
  return e.c_str();
}

// Block YAML as kubectl writes it: keys sorted, two spaces a level, and a list under a key
// at the key's own indentation ("taints:\n- effect: ...").
void WriteYaml(const nlohmann::ordered_json& j, size_t indent, std::string* out) {
  const std::string pad(indent, ' ');
  auto nested = [](const nlohmann::ordered_json& v) {
    return (v.is_object() || v.is_array()) && !v.empty();
  };
  if (j.is_object()) {
    std::map<std::string, const nlohmann::ordered_json*> sorted;
    for (auto it = j.begin(); it != j.end(); ++it) sorted[it.key()] = &it.value();
    for (const auto& [k, v] : sorted) {
      *out += pad + YamlScalar(k) + ":";
      if (nested(*v)) {
        *out += "\n";
        WriteYaml(*v, v->is_object() ? indent + 2 : indent, out);
      } else {
        *out += " " + YamlScalar(*v) + "\n";
      }
    }
    return;
  }
  for (const auto& item : j) {
    if (!nested(item)) {
      *out += pad + "- " + YamlScalar(item) + "\n";
      continue;
    }
    // The item's first line goes after the dash; the rest keeps its indentation.
    std::string inner;
    WriteYaml(item, indent + 2, &inner);
    *out += pad + "- " + inner.substr(indent + 2);
  }
}

}  // namespace

std::string JsonToYaml(const nlohmann::ordered_json& json) {
  if ((json.is_object() || json.is_array()) && !json.empty()) {
    std::string out;
    WriteYaml(json, 0, &out);
    return out;
  }
  return YamlScalar(json) + "\n";
}

std::string ToYaml(const Message& msg) { return JsonToYaml(EncodeJson(msg)); }

}  // namespace mkube::api
