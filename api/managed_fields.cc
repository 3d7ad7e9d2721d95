#include "api/managed_fields.h"

#include <map>

#include "absl/strings/cord.h"
#include "api/codec.h"
#include "api/object.h"
#include "base/status.h"
#include "fmt/format.h"

namespace mkube::api {
namespace {

// Fields the server keeps, which no manager owns.
bool Ignored(const FieldPath& at, const std::string& key) {
  if (at.empty()) return key == "apiVersion" || key == "kind" || key == "status";
  if (at.size() == 1 && at[0] == "f:metadata") {
    static const std::set<std::string> server = {
        "name",           "namespace",         "uid",
        "resourceVersion", "generation",       "creationTimestamp",
        "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields",
        "selfLink"};
    return server.contains(key);
  }
  return false;
}

std::string ElementStep(const std::string& key, const PatchJson& element) {
  PatchJson k = PatchJson::object();
  k[key] = element.at(key);
  return "k:" + k.dump();
}

void Walk(const PatchJson& obj, FieldPath& at, FieldSet* out);

// The fields of `value`, the value of field `field` at `at`.
void AddValue(const PatchJson& value, const std::string& field, FieldPath& at, FieldSet* out) {
  if (value.is_object() && !value.empty()) return Walk(value, at, out);
  if (value.is_array() && !value.empty()) {
    if (MergedPrimitiveList(field)) {
      for (const auto& e : value) {
        at.push_back("v:" + e.dump());
        out->insert(at);
        at.pop_back();
      }
      return;
    }
    if (auto key = MergeKey(field, value.front()); key && value.front().is_object()) {
      for (const auto& e : value) {
        if (!e.is_object() || !e.contains(*key)) continue;
        at.push_back(ElementStep(*key, e));
        out->insert(at);
        Walk(e, at, out);
        at.pop_back();
      }
      return;
    }
  }
  out->insert(at);  // a scalar, an atomic list, an empty map
}

void Walk(const PatchJson& obj, FieldPath& at, FieldSet* out) {
  for (const auto& [k, v] : obj.items()) {
    if (Ignored(at, k)) continue;
    at.push_back("f:" + k);
    AddValue(v, k, at, out);
    at.pop_back();
  }
}

// The element of list `list` a "k:" or "v:" step names.
PatchJson* Element(PatchJson& list, const std::string& step) {
  if (!list.is_array()) return nullptr;
  PatchJson want = PatchJson::parse(step.substr(2), nullptr, false);
  if (want.is_discarded()) return nullptr;
  for (auto& e : list) {
    if (step[0] == 'v') {
      if (e == want) return &e;
      continue;
    }
    bool match = e.is_object();
    for (const auto& [k, v] : want.items()) match = match && e.contains(k) && e[k] == v;
    if (match) return &e;
  }
  return nullptr;
}

PatchJson* At(PatchJson& doc, const FieldPath& path) {
  PatchJson* cur = &doc;
  for (const auto& step : path) {
    if (step.size() < 2) return nullptr;
    if (step[0] == 'f') {
      if (!cur->is_object()) return nullptr;
      auto it = cur->find(step.substr(2));
      if (it == cur->end()) return nullptr;
      cur = &*it;
    } else {
      cur = Element(*cur, step);
      if (!cur) return nullptr;
    }
  }
  return cur;
}

const PatchJson* At(const PatchJson& doc, const FieldPath& path) {
  return At(const_cast<PatchJson&>(doc), path);
}

// Takes the field at `path` out of `doc`, if it is there.
void Remove(PatchJson& doc, const FieldPath& path) {
  if (path.empty()) return;
  PatchJson* parent = At(doc, FieldPath(path.begin(), path.end() - 1));
  if (!parent) return;
  const std::string& last = path.back();
  if (last[0] == 'f') {
    if (parent->is_object()) parent->erase(last.substr(2));
    return;
  }
  if (const PatchJson* e = Element(*parent, last)) {
    for (auto it = parent->begin(); it != parent->end(); ++it) {
      if (&*it == e) {
        parent->erase(it);
        return;
      }
    }
  }
}

// A field counts as set differently when it is a value (not a list element's presence) and
// the two documents hold different values there.
bool Differs(const FieldPath& p, const PatchJson* a, const PatchJson* b) {
  if (!a || !b) return a != b;
  if (p.back()[0] != 'f') return false;
  return *a != *b;
}

struct Entry {
  PatchJson json;
  FieldSet fields;
  bool Is(const std::string& manager, const char* operation,
          const std::string& subresource = "") const {
    return json.value("manager", "") == manager && json.value("operation", "") == operation &&
           json.value("subresource", "") == subresource;
  }
};

std::vector<Entry> EntriesOf(const PatchJson& obj) {
  std::vector<Entry> out;
  auto meta = obj.find("metadata");
  if (meta == obj.end() || !meta->is_object()) return out;
  auto mf = meta->find("managedFields");
  if (mf == meta->end() || !mf->is_array()) return out;
  for (const auto& e : *mf) {
    if (!e.is_object()) continue;
    out.push_back({e, FromFieldsV1(e.value("fieldsV1", PatchJson::object()))});
  }
  return out;
}

void WriteEntries(std::vector<Entry>& entries, PatchJson* obj) {
  PatchJson list = PatchJson::array();
  for (auto& e : entries) {
    if (e.fields.empty()) continue;
    e.json["fieldsType"] = "FieldsV1";
    e.json["fieldsV1"] = ToFieldsV1(e.fields);
    list.push_back(std::move(e.json));
  }
  PatchJson& meta = (*obj)["metadata"];
  if (list.empty()) {
    if (meta.is_object()) meta.erase("managedFields");
  } else {
    meta["managedFields"] = std::move(list);
  }
}

PatchJson NewEntry(const Manager& m, const char* operation) {
  PatchJson e = {{"manager", m.name}, {"operation", operation}, {"apiVersion", m.api_version},
                 {"time", m.time}};
  if (!m.subresource.empty()) e["subresource"] = m.subresource;
  return e;
}

// A manager as conflicts name it: "kubectl-edit" using apps/v1 for an update, "x" for an apply.
std::string Describe(const PatchJson& entry) {
  std::string out = fmt::format("\"{}\"", entry.value("manager", ""));
  if (std::string sub = entry.value("subresource", ""); !sub.empty()) {
    out += fmt::format(" with subresource \"{}\"", sub);
  }
  if (entry.value("operation", "") == "Update") {
    out += " using " + entry.value("apiVersion", "");
  }
  return out;
}

absl::Status ConflictError(const std::vector<std::pair<std::string, FieldPath>>& conflicts) {
  PatchJson causes = PatchJson::array();
  std::map<std::string, std::vector<std::string>> by_manager;
  for (const auto& [who, path] : conflicts) {
    causes.push_back({{"type", "FieldManagerConflict"},
                      {"message", "conflict with " + who},
                      {"field", PathString(path)}});
    by_manager[who].push_back(PathString(path));
  }
  std::string message;
  if (conflicts.size() == 1) {
    message = fmt::format("Apply failed with 1 conflict: conflict with {}: {}", conflicts[0].first,
                          PathString(conflicts[0].second));
  } else {
    std::vector<std::string> lines;
    for (const auto& [who, paths] : by_manager) {
      lines.push_back(fmt::format("conflicts with {}:", who));
      for (const auto& p : paths) lines.push_back("- " + p);
    }
    message = fmt::format("Apply failed with {} conflicts: {}", conflicts.size(),
                          fmt::join(lines, "\n"));
  }
  absl::Status st = absl::AbortedError(message);
  st.SetPayload(kConflictsPayload, absl::Cord(causes.dump()));
  return st;
}

// Sets the message's managedFields to the JSON form's.
absl::Status SetManagedFields(const PatchJson& obj, google::protobuf::Message* msg) {
  ObjectMeta* meta = MutableMetaOf(msg);
  meta->clear_managed_fields();
  const PatchJson* list = At(obj, {"f:metadata", "f:managedFields"});
  if (!list || !list->is_array()) return absl::OkStatus();
  for (const auto& e : *list) {
    MKUBE_RETURN_IF_ERROR(DecodeNode(YAML::Load(e.dump()), meta->add_managed_fields(),
                                     "metadata.managedFields"));
  }
  return absl::OkStatus();
}

}  // namespace

FieldSet FieldsOf(const PatchJson& obj) {
  FieldSet out;
  FieldPath at;
  if (obj.is_object()) Walk(obj, at, &out);
  return out;
}

PatchJson ToFieldsV1(const FieldSet& fields) {
  // Built sorted (as Kubernetes writes it: "." first), then kept in that order.
  nlohmann::json tree = nlohmann::json::object();
  for (const auto& p : fields) {
    nlohmann::json* node = &tree;
    for (const auto& step : p) node = &(*node)[step];
    if (node->is_null()) *node = nlohmann::json::object();
  }
  for (const auto& p : fields) {
    nlohmann::json* node = &tree;
    for (const auto& step : p) node = &(*node)[step];
    if (!node->empty() && !node->contains(".")) (*node)["."] = nlohmann::json::object();
  }
  return PatchJson::parse(tree.dump());
}

FieldSet FromFieldsV1(const PatchJson& tree) {
  FieldSet out;
  FieldPath at;
  auto walk = [&](const auto& self, const PatchJson& node) -> void {
    if (!node.is_object()) return;
    for (const auto& [k, child] : node.items()) {
      if (k == ".") {
        if (!at.empty()) out.insert(at);
        continue;
      }
      at.push_back(k);
      if (child.is_object() && child.empty()) {
        out.insert(at);
      } else {
        self(self, child);
      }
      at.pop_back();
    }
  };
  walk(walk, tree);
  return out;
}

std::string PathString(const FieldPath& path) {
  std::string out;
  for (const auto& step : path) {
    if (step.size() < 2) continue;
    const std::string rest = step.substr(2);
    if (step[0] == 'f') {
      out += "." + rest;
    } else if (step[0] == 'v') {
      out += "[=" + rest + "]";
    } else {
      PatchJson keys = PatchJson::parse(rest, nullptr, false);
      std::vector<std::string> parts;
      if (keys.is_object()) {
        for (const auto& [k, v] : keys.items()) parts.push_back(k + "=" + v.dump());
      }
      out += "[" + fmt::format("{}", fmt::join(parts, ",")) + "]";
    }
  }
  return out;
}

absl::StatusOr<PatchJson> ServerSideApply(const PatchJson& live, const PatchJson& config,
                                          const Manager& m, bool force) {
  if (!config.is_object()) return absl::InvalidArgumentError("the applied configuration is not an object");
  const FieldSet applied = FieldsOf(config);
  std::vector<Entry> entries = EntriesOf(live);
  FieldSet previous;
  std::vector<std::pair<std::string, FieldPath>> conflicts;
  std::vector<std::pair<size_t, FieldPath>> taken;  // (entry, field) to take on force
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].Is(m.name, "Apply")) {
      previous = entries[i].fields;
      continue;
    }
    for (const auto& p : entries[i].fields) {
      if (!applied.contains(p)) continue;
      const PatchJson* want = At(config, p);
      const PatchJson* have = At(live, p);
      if (have && Differs(p, want, have)) {
        conflicts.emplace_back(Describe(entries[i].json), p);
        taken.emplace_back(i, p);
      }
    }
  }
  if (!conflicts.empty() && !force) return ConflictError(conflicts);
  for (const auto& [i, p] : taken) entries[i].fields.erase(p);

  PatchJson without_status = config;
  without_status.erase("status");
  MKUBE_ASSIGN_OR_RETURN(PatchJson merged, ApplyStrategicMergePatch(live, without_status));
  // What this manager applied before and applies no more goes, unless another owns it.
  for (const auto& p : previous) {
    if (applied.contains(p)) continue;
    bool owned = false;
    for (const auto& e : entries) owned = owned || (!e.Is(m.name, "Apply") && e.fields.contains(p));
    if (!owned) Remove(merged, p);
  }
  bool found = false;
  for (auto& e : entries) {
    if (!e.Is(m.name, "Apply")) continue;
    e.json = NewEntry(m, "Apply");
    e.fields = applied;
    found = true;
  }
  if (!found) entries.push_back({NewEntry(m, "Apply"), applied});
  WriteEntries(entries, &merged);
  return merged;
}

void RecordUpdate(const PatchJson* before, PatchJson* after, const Manager& m) {
  const FieldSet now = FieldsOf(*after);
  FieldSet changed, removed;
  for (const auto& p : now) {
    if (!before || Differs(p, At(*before, p), At(*after, p))) changed.insert(p);
  }
  if (before) {
    for (const auto& p : FieldsOf(*before)) {
      if (!now.contains(p)) removed.insert(p);
    }
  }
  // The entries are the stored object's: a client's own managedFields are not taken.
  std::vector<Entry> entries = before ? EntriesOf(*before) : std::vector<Entry>{};
  if (changed.empty() && removed.empty()) {
    WriteEntries(entries, after);
    return;
  }
  bool found = false;
  for (auto& e : entries) {
    for (const auto& p : removed) e.fields.erase(p);
    if (e.Is(m.name, "Update", m.subresource)) {
      e.fields.insert(changed.begin(), changed.end());
      e.json = NewEntry(m, "Update");
      found = true;
    } else {
      for (const auto& p : changed) e.fields.erase(p);
    }
  }
  if (!found && !changed.empty()) entries.push_back({NewEntry(m, "Update"), changed});
  WriteEntries(entries, after);
}

absl::StatusOr<std::unique_ptr<google::protobuf::Message>> ApplyConfiguration(
    const google::protobuf::Message& current, std::string_view config, const Manager& m,
    bool force) {
  MKUBE_ASSIGN_OR_RETURN(PatchJson applied, LoadApplyConfig(config));
  MKUBE_ASSIGN_OR_RETURN(PatchJson doc, ServerSideApply(EncodeJson(current), applied, m, force));
  std::unique_ptr<google::protobuf::Message> out(current.New());
  MKUBE_RETURN_IF_ERROR(DecodeNode(YAML::Load(doc.dump()), out.get()));
  return out;
}

absl::Status RecordManager(const google::protobuf::Message* before, google::protobuf::Message* after,
                           const Manager& m) {
  PatchJson now = EncodeJson(*after);
  if (before) {
    const PatchJson then = EncodeJson(*before);
    RecordUpdate(&then, &now, m);
  } else {
    RecordUpdate(nullptr, &now, m);
  }
  return SetManagedFields(now, after);
}

absl::Status RecordApplied(const PatchJson& config, google::protobuf::Message* created,
                           const Manager& m) {
  std::vector<Entry> entries = {{NewEntry(m, "Apply"), FieldsOf(config)}};
  PatchJson obj = PatchJson::object();
  WriteEntries(entries, &obj);
  return SetManagedFields(obj, created);
}

}  // namespace mkube::api
