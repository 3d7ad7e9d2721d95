#include "api/patch.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "base/status.h"
#include "fmt/format.h"
#include "yaml-cpp/yaml.h"

namespace mkube::api {
namespace {

constexpr char kOrderPrefix[] = "$setElementOrder/";
constexpr char kDeletePrefix[] = "$deleteFromPrimitiveList/";

}  // namespace

std::optional<std::string> MergeKeyOf(const std::string& field, bool service_port) {
  static const auto* keys = new std::map<std::string, std::string>{
      {"containers", "name"},
      {"initContainers", "name"},
      {"ephemeralContainers", "name"},
      {"volumes", "name"},
      {"env", "name"},
      {"imagePullSecrets", "name"},
      {"volumeMounts", "mountPath"},
      {"volumeDevices", "devicePath"},
      {"conditions", "type"},
      {"addresses", "type"},
      {"hostAliases", "ip"},
      {"ownerReferences", "uid"},
      {"topologySpreadConstraints", "topologyKey"},
      {"resourceClaims", "name"},
  };
  if (field == "ports") return service_port ? "port" : "containerPort";
  auto it = keys->find(field);
  if (it == keys->end()) return std::nullopt;
  return it->second;
}

std::optional<std::string> MergeKey(const std::string& field, const PatchJson& sample) {
  // A container's ports carry containerPort; a Service's carry port.
  return MergeKeyOf(field, sample.is_object() && !sample.contains("containerPort") &&
                               sample.contains("port"));
}

bool MergedPrimitiveList(const std::string& field) { return field == "finalizers"; }

namespace {

bool IsDirective(const std::string& key) { return !key.empty() && key[0] == '$'; }

PatchJson WithoutDirectives(PatchJson v) {
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end();) {
      if (IsDirective(it.key())) {
        it = v.erase(it);
      } else {
        *it = WithoutDirectives(*it);
        ++it;
      }
    }
  } else if (v.is_array()) {
    PatchJson out = PatchJson::array();
    for (auto& e : v) {
      if (e.is_object() && e.contains("$patch")) continue;
      out.push_back(WithoutDirectives(e));
    }
    return out;
  }
  return v;
}

absl::StatusOr<PatchJson> Strategic(const PatchJson& doc, const PatchJson& patch);

// The elements of `list` in the order `order` gives for those it names (by merge key), the
// others after them in their own order.
PatchJson Reorder(const PatchJson& list, const PatchJson& order, const std::string& key) {
  PatchJson out = PatchJson::array();
  std::vector<bool> taken(list.size(), false);
  for (const auto& o : order) {
    const PatchJson want = key.empty() ? o : (o.is_object() && o.contains(key) ? o[key] : o);
    for (size_t i = 0; i < list.size(); ++i) {
      if (taken[i]) continue;
      const PatchJson& e = list[i];
      const bool match = key.empty() ? e == want : (e.is_object() && e.contains(key) && e[key] == want);
      if (match) {
        out.push_back(e);
        taken[i] = true;
        break;
      }
    }
  }
  for (size_t i = 0; i < list.size(); ++i) {
    if (!taken[i]) out.push_back(list[i]);
  }
  return out;
}

absl::StatusOr<PatchJson> MergeList(const PatchJson& old, const PatchJson& patch,
                                    const std::string& field, const std::string& key) {
  // An element {"$patch": "replace"} replaces the list with the patch's other elements.
  for (const auto& e : patch) {
    if (e.is_object() && e.size() == 1 && e.value("$patch", "") == "replace") {
      return WithoutDirectives(patch);
    }
  }
  PatchJson out = old.is_array() ? old : PatchJson::array();
  for (const auto& elem : patch) {
    if (!elem.is_object() || !elem.contains(key)) {
      if (elem.is_object() && elem.contains("$patch")) {
        return absl::InvalidArgumentError(fmt::format(
            "the {} element with \"$patch\" must name its merge key \"{}\"", field, key));
      }
      out.push_back(WithoutDirectives(elem));
      continue;
    }
    auto found = std::find_if(out.begin(), out.end(), [&](const PatchJson& e) {
      return e.is_object() && e.contains(key) && e[key] == elem[key];
    });
    const std::string directive = elem.value("$patch", "");
    if (directive == "delete") {
      if (found != out.end()) out.erase(found);
      continue;
    }
    if (found == out.end()) {
      out.push_back(WithoutDirectives(elem));
    } else if (directive == "replace") {
      *found = WithoutDirectives(elem);
    } else {
      MKUBE_ASSIGN_OR_RETURN(auto merged, Strategic(*found, elem));
      *found = std::move(merged);
    }
  }
  return out;
}

// A field of a map under a strategic merge.
absl::Status MergeField(PatchJson& out, const std::string& k, const PatchJson& v) {
  if (v.is_null()) {
    out.erase(k);
    return absl::OkStatus();
  }
  if (v.is_array()) {
    const bool have = out.contains(k) && out[k].is_array();
    std::optional<std::string> key = MergeKey(k, v.empty() ? PatchJson() : v[0]);
    if (key && have) {
      MKUBE_ASSIGN_OR_RETURN(out[k], MergeList(out[k], v, k, *key));
    } else if (MergedPrimitiveList(k) && have) {
      for (const auto& f : v) {
        if (std::find(out[k].begin(), out[k].end(), f) == out[k].end()) out[k].push_back(f);
      }
    } else {
      out[k] = WithoutDirectives(v);
    }
    return absl::OkStatus();
  }
  if (v.is_object()) {
    MKUBE_ASSIGN_OR_RETURN(auto merged, Strategic(out.contains(k) ? out[k] : PatchJson(), v));
    if (merged.is_null()) {
      out.erase(k);
    } else {
      out[k] = std::move(merged);
    }
    return absl::OkStatus();
  }
  out[k] = v;
  return absl::OkStatus();
}

absl::StatusOr<PatchJson> Strategic(const PatchJson& doc, const PatchJson& patch) {
  if (!patch.is_object()) return patch;
  const std::string directive = patch.value("$patch", "");
  if (directive == "replace") return WithoutDirectives(patch);
  if (directive == "delete") return PatchJson();
  if (!directive.empty() && directive != "merge") {
    return absl::InvalidArgumentError(fmt::format("unknown patch directive \"$patch\": \"{}\"",
                                                  directive));
  }
  PatchJson out = doc.is_object() ? doc : PatchJson::object();
  if (auto retain = patch.find("$retainKeys"); retain != patch.end()) {
    if (!retain->is_array()) {
      return absl::InvalidArgumentError("\"$retainKeys\" must be a list of field names");
    }
    std::set<std::string> keep;
    for (const auto& k : *retain) {
      if (k.is_string()) keep.insert(k.get<std::string>());
    }
    for (auto it = out.begin(); it != out.end();) {
      it = keep.count(it.key()) ? std::next(it) : out.erase(it);
    }
  }
  for (const auto& [k, v] : patch.items()) {
    if (IsDirective(k)) continue;
    MKUBE_RETURN_IF_ERROR(MergeField(out, k, v));
  }
  for (const auto& [k, v] : patch.items()) {
    if (absl::StartsWith(k, kDeletePrefix)) {
      const std::string field = k.substr(sizeof(kDeletePrefix) - 1);
      if (!out.contains(field) || !out[field].is_array() || !v.is_array()) continue;
      PatchJson kept = PatchJson::array();
      for (const auto& e : out[field]) {
        if (std::find(v.begin(), v.end(), e) == v.end()) kept.push_back(e);
      }
      out[field] = std::move(kept);
    } else if (absl::StartsWith(k, kOrderPrefix)) {
      const std::string field = k.substr(sizeof(kOrderPrefix) - 1);
      if (!out.contains(field) || !out[field].is_array() || !v.is_array()) continue;
      std::optional<std::string> key = MergeKey(field, out[field].empty() ? PatchJson() : out[field][0]);
      out[field] = Reorder(out[field], v, key.value_or(""));
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<PatchJson> ApplyJsonPatch(const PatchJson& doc, const PatchJson& ops) {
  if (!ops.is_array()) {
    return absl::InvalidArgumentError("a json patch must be a list of operations");
  }
  try {
    return doc.patch(ops);
  } catch (const nlohmann::json::exception& e) {
    // "[json.exception.out_of_range.403] key 'x' not found": the part after the tag.
    std::string what = e.what();
    if (auto close = what.find("] "); close != std::string::npos) what = what.substr(close + 2);
    return absl::InvalidArgumentError(what);
  }
}

absl::StatusOr<PatchJson> ApplyStrategicMergePatch(const PatchJson& doc, const PatchJson& patch) {
  if (!patch.is_object()) {
    return absl::InvalidArgumentError("a strategic merge patch must be a JSON object");
  }
  return Strategic(doc, patch);
}

PatchJson MergePatchBetween(const PatchJson& from, const PatchJson& to) {
  PatchJson patch = PatchJson::object();
  if (!from.is_object() || !to.is_object()) return to;
  for (const auto& [k, v] : from.items()) {
    if (!to.contains(k)) patch[k] = nullptr;
  }
  for (const auto& [k, v] : to.items()) {
    auto old = from.find(k);
    if (old == from.end()) {
      patch[k] = v;
    } else if (*old != v) {
      patch[k] = old->is_object() && v.is_object() ? MergePatchBetween(*old, v) : v;
    }
  }
  return patch;
}

std::optional<PatchType> PatchTypeOf(std::string_view content_type) {
  const std::string_view media = content_type.substr(0, content_type.find(';'));
  if (media == "application/merge-patch+json") return PatchType::kMerge;
  if (media == "application/strategic-merge-patch+json") return PatchType::kStrategic;
  if (media == "application/json-patch+json") return PatchType::kJson;
  if (media == "application/apply-patch+yaml") return PatchType::kApply;
  return std::nullopt;
}

std::string PatchTypeName(PatchType t) {
  switch (t) {
    case PatchType::kMerge: return "merge";
    case PatchType::kStrategic: return "strategic";
    case PatchType::kJson: return "json";
    case PatchType::kApply: return "apply";
  }
  return "merge";
}

std::optional<PatchType> PatchTypeNamed(std::string_view name) {
  for (PatchType t : {PatchType::kMerge, PatchType::kStrategic, PatchType::kJson, PatchType::kApply}) {
    if (PatchTypeName(t) == name) return t;
  }
  if (name.empty()) return PatchType::kMerge;
  return std::nullopt;
}

namespace {

// YAML (JSON is YAML) as JSON: what an apply patch's body becomes.
PatchJson FromYaml(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      PatchJson o = PatchJson::object();
      for (const auto& kv : n) o[kv.first.as<std::string>()] = FromYaml(kv.second);
      return o;
    }
    case YAML::NodeType::Sequence: {
      PatchJson a = PatchJson::array();
      for (const auto& e : n) a.push_back(FromYaml(e));
      return a;
    }
    case YAML::NodeType::Scalar: {
      const std::string& s = n.Scalar();
      if (n.Tag() == "!") return s;  // quoted
      if (s == "true" || s == "false") return s == "true";
      if (s == "null" || s == "~") return nullptr;
      PatchJson num = PatchJson::parse(s, nullptr, false);
      if (!num.is_discarded() && num.is_number()) return num;
      return s;
    }
    default:
      return nullptr;
  }
}

}  // namespace

absl::StatusOr<PatchJson> LoadApplyConfig(std::string_view text) {
  try {
    return FromYaml(YAML::Load(std::string(text)));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(fmt::format("the apply patch is not YAML: {}", e.msg));
  }
}

absl::StatusOr<PatchJson> ApplyPatch(const PatchJson& doc, PatchType type, std::string_view text) {
  PatchJson patch;
  if (type == PatchType::kApply) {
    MKUBE_ASSIGN_OR_RETURN(patch, LoadApplyConfig(text));
  } else {
    patch = PatchJson::parse(text, nullptr, false);
    if (patch.is_discarded()) {
      return absl::InvalidArgumentError("the patch is not valid JSON");
    }
  }
  switch (type) {
    case PatchType::kMerge: {
      if (!patch.is_object()) return absl::InvalidArgumentError("a merge patch must be a JSON object");
      PatchJson out = doc;
      out.merge_patch(patch);
      return out;
    }
    case PatchType::kJson:
      return ApplyJsonPatch(doc, patch);
    case PatchType::kStrategic:
    case PatchType::kApply:
      return ApplyStrategicMergePatch(doc, patch);
  }
  return absl::InvalidArgumentError("unknown patch type");
}

}  // namespace mkube::api
