#include "cli/patch.h"

#include <map>
#include <string>

#include "base/status.h"
#include "fmt/format.h"

namespace mkube::cli {
namespace {

// The key each list merges on, by field name, as Kubernetes' types declare it
// (patchStrategy=merge, patchMergeKey=...). Lists not named here are replaced whole.
const std::map<std::string, std::string>& MergeKeys() {
  static const auto* keys = new std::map<std::string, std::string>{
      {"containers", "name"},      {"initContainers", "name"},
      {"ephemeralContainers", "name"}, {"volumes", "name"},
      {"env", "name"},             {"imagePullSecrets", "name"},
      {"ports", "containerPort"},  {"volumeMounts", "mountPath"},
      {"volumeDevices", "devicePath"}, {"taints", "key"},
      {"conditions", "type"},      {"hostAliases", "ip"},
      {"ownerReferences", "uid"},  {"topologySpreadConstraints", "topologyKey"},
  };
  return *keys;
}

PatchJson WithoutDirectives(PatchJson v) {
  if (!v.is_object()) return v;
  for (auto it = v.begin(); it != v.end();) {
    if (it.key().rfind("$", 0) == 0) {
      it = v.erase(it);
    } else {
      if (it->is_object()) *it = WithoutDirectives(*it);
      ++it;
    }
  }
  return v;
}

absl::StatusOr<PatchJson> Strategic(const PatchJson& doc, const PatchJson& patch);

absl::StatusOr<PatchJson> MergeList(const PatchJson& old, const PatchJson& patch,
                                    const std::string& key) {
  PatchJson out = old;
  for (const auto& elem : patch) {
    if (!elem.is_object() || !elem.contains(key)) {
      if (elem.is_object() && elem.value("$patch", "") == "delete") {
        return absl::InvalidArgumentError(
            fmt::format("a list element to delete must name its merge key \"{}\"", key));
      }
      out.push_back(WithoutDirectives(elem));
      continue;
    }
    auto found = std::find_if(out.begin(), out.end(), [&](const PatchJson& e) {
      return e.is_object() && e.contains(key) && e[key] == elem[key];
    });
    if (elem.value("$patch", "") == "delete") {
      if (found != out.end()) out.erase(found);
      continue;
    }
    if (found == out.end()) {
      out.push_back(WithoutDirectives(elem));
      continue;
    }
    MKUBE_ASSIGN_OR_RETURN(auto merged, Strategic(*found, elem));
    *found = std::move(merged);
  }
  return out;
}

absl::StatusOr<PatchJson> Strategic(const PatchJson& doc, const PatchJson& patch) {
  if (!patch.is_object()) return patch;
  if (patch.value("$patch", "") == "replace") return WithoutDirectives(patch);
  if (patch.value("$patch", "") == "delete") return PatchJson();
  PatchJson out = doc.is_object() ? doc : PatchJson::object();
  for (const auto& [k, v] : patch.items()) {
    if (k.rfind("$", 0) == 0) continue;  // directives: $patch, $setElementOrder/..., $retainKeys
    if (v.is_null()) {
      out.erase(k);
      continue;
    }
    auto key = MergeKeys().find(k);
    if (v.is_array() && key != MergeKeys().end() && out.contains(k) && out[k].is_array()) {
      MKUBE_ASSIGN_OR_RETURN(auto merged, MergeList(out[k], v, key->second));
      out[k] = std::move(merged);
    } else if (v.is_array() && k == "finalizers" && out.contains(k) && out[k].is_array()) {
      for (const auto& f : v) {
        if (std::find(out[k].begin(), out[k].end(), f) == out[k].end()) out[k].push_back(f);
      }
    } else if (v.is_object()) {
      MKUBE_ASSIGN_OR_RETURN(auto merged, Strategic(out.contains(k) ? out[k] : PatchJson(), v));
      out[k] = std::move(merged);
    } else {
      out[k] = WithoutDirectives(v);
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

}  // namespace mkube::cli
