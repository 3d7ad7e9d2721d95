#include "apiserver/rest/patch_fields.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "api/codec.h"
#include "apiserver/rest/encoding.h"
#include "base/status.h"

namespace mkube::apiserver::rest {
namespace {

// The fields a merge, strategic or apply patch names that its kind has not (directives
// aside): the patched object would not have them.
std::vector<std::string> UnknownPatchFields(const api::KindInfo& kind, const std::string& body) {
  std::vector<std::string> unknown, out;
  auto doc = LoadBody(body);
  if (!doc.ok()) return out;
  auto scratch = kind.New();
  (void)api::DecodeNode(*doc, scratch.get(), "", &unknown);  // its other errors are the registry's
  for (auto& f : unknown) {
    if (f.find('$') == std::string::npos) out.push_back(std::move(f));
  }
  return out;
}

// `doc` without the field at `path` (as DecodeNode names it: "spec.containers[0].foo").
void RemoveField(api::PatchJson& doc, const std::string& path) {
  api::PatchJson* node = &doc;
  size_t at = 0;
  while (node && at < path.size()) {
    if (path[at] == '.') ++at;
    if (path[at] == '[') {
      const size_t close = path.find(']', at);
      size_t i = 0;
      if (close == std::string::npos ||
          !absl::SimpleAtoi(path.substr(at + 1, close - at - 1), &i) || !node->is_array() ||
          i >= node->size()) {
        return;
      }
      node = &(*node)[i];
      at = close + 1;
      continue;
    }
    const size_t end = path.find_first_of(".[", at);
    const std::string name =
        path.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (!node->is_object() || !node->contains(name)) return;
    if (end == std::string::npos) {
      node->erase(name);
      return;
    }
    node = &(*node)[name];
    at = end;
  }
}

// A merge, strategic or apply patch without the fields at `paths`, as JSON.
absl::StatusOr<std::string> WithoutFields(api::PatchType type, const std::string& body,
                                          const std::vector<std::string>& paths) {
  api::PatchJson doc;
  if (type == api::PatchType::kApply) {
    MKUBE_ASSIGN_OR_RETURN(doc, api::LoadApplyConfig(body));
  } else {
    doc = api::PatchJson::parse(body, nullptr, false);
    if (doc.is_discarded()) return absl::InvalidArgumentError("the patch is not valid JSON");
  }
  for (const auto& p : paths) RemoveField(doc, p);
  return doc.dump();
}

// Kubernetes' words for a strict decode that met unknown fields.
std::string StrictError(const std::vector<std::string>& unknown) {
  std::vector<std::string> each;
  for (const auto& f : unknown) each.push_back(UnknownField(f));
  return "strict decoding error: " + absl::StrJoin(each, ", ");
}

// A JSON pointer's tokens, unescaped.
std::vector<std::string> Tokens(const std::string& pointer) {
  std::vector<std::string> out;
  for (absl::string_view t : absl::StrSplit(pointer, '/', absl::SkipEmpty())) {
    out.push_back(absl::StrReplaceAll(t, {{"~1", "/"}, {"~0", "~"}}));
  }
  return out;
}

bool IsIndex(const std::string& token) {
  size_t index = 0;
  return token == "-" || absl::SimpleAtoi(token, &index);
}

// A JSON patch operation's value placed at its path in an otherwise empty object, so that the
// kind's decoder names the unknown fields in it. Array indices become [0] in that object;
// `named` is the path as Kubernetes names fields ("spec.containers[3]"), `placed` as the
// decoder will ("spec.containers[0]").
struct PlacedValue {
  api::PatchJson doc;
  std::string named, placed;
};

PlacedValue Place(const std::vector<std::string>& tokens, const api::PatchJson& value) {
  PlacedValue out;
  out.doc = value;
  for (auto it = tokens.rbegin(); it != tokens.rend(); ++it) {
    out.doc = IsIndex(*it) ? api::PatchJson::array({std::move(out.doc)})
                           : api::PatchJson::object({{*it, std::move(out.doc)}});
  }
  for (const auto& t : tokens) {
    const std::string dot = out.named.empty() ? "" : ".";
    out.named += IsIndex(t) ? "[" + t + "]" : dot + t;
    out.placed += IsIndex(t) ? "[0]" : dot + t;
  }
  return out;
}

// A JSON patch's "add" and "replace" operations, checked as a merge patch's fields are: an
// operation whose path is (or goes through) an unknown field goes, and so do the unknown
// fields inside a value.
absl::StatusOr<std::string> JsonPatchBody(Front::Call& c, FieldValidation validation) {
  api::PatchJson ops = api::PatchJson::parse(c.req.body, nullptr, false);
  if (!ops.is_array()) return c.req.body;  // the registry refuses it with its reason
  std::vector<std::string> unknown;
  api::PatchJson kept = api::PatchJson::array();
  for (auto& op : ops) {
    const bool writes = op.is_object() && op.contains("value") && op.contains("path") &&
                        op["path"].is_string() && (op["op"] == "add" || op["op"] == "replace");
    if (!writes) {
      kept.push_back(std::move(op));
      continue;
    }
    const std::vector<std::string> tokens = Tokens(op["path"].get<std::string>());
    PlacedValue p = Place(tokens, op["value"]);
    bool drop = false;
    for (const auto& f : UnknownPatchFields(*c.target.kind, p.doc.dump())) {
      const size_t n = p.placed.size();
      if (f.size() > n && absl::StartsWith(f, p.placed) && (f[n] == '.' || f[n] == '[')) {
        unknown.push_back(p.named + f.substr(n));  // inside the value
        RemoveField(p.doc, f);
      } else {
        unknown.push_back(f == p.placed ? p.named : f);  // the path itself, or on the way
        drop = true;
      }
    }
    if (drop) continue;
    api::PatchJson* value = &p.doc;
    for (const auto& t : tokens) value = IsIndex(t) ? &(*value)[0] : &(*value)[t];
    op["value"] = std::move(*value);
    kept.push_back(std::move(op));
  }
  if (unknown.empty()) return c.req.body;
  if (validation == FieldValidation::kStrict)
    return absl::InvalidArgumentError(StrictError(unknown));
  if (validation == FieldValidation::kWarn) {
    for (const auto& f : unknown) c.warnings.push_back(UnknownField(f));
  }
  return kept.dump();
}

}  // namespace

absl::StatusOr<std::string> PatchBody(Front::Call& c, api::PatchType type) {
  MKUBE_ASSIGN_OR_RETURN(const FieldValidation validation, FieldValidationOf(c));
  if (type == api::PatchType::kJson) return JsonPatchBody(c, validation);
  const auto unknown = UnknownPatchFields(*c.target.kind, c.req.body);
  if (unknown.empty()) return c.req.body;
  if (validation == FieldValidation::kStrict)
    return absl::InvalidArgumentError(StrictError(unknown));
  if (validation == FieldValidation::kWarn) {
    for (const auto& f : unknown) c.warnings.push_back(UnknownField(f));
  }
  return WithoutFields(type, c.req.body, unknown);
}

}  // namespace mkube::apiserver::rest
