// wait --for=delete | --for=condition=TYPE[=VALUE] | --for=jsonpath='{...}'=VALUE: polls each
// object until it meets the condition, or the timeout passes.
#include <iostream>
#include <thread>

#include "absl/strings/ascii.h"
#include "api/codec.h"
#include "api/object.h"
#include "cli/commands.h"
#include "cli/jsonpath.h"
#include "fmt/format.h"

namespace mkube::cli {
namespace {

struct Condition {
  enum Kind { kDelete, kCondition, kJsonPath } kind = kDelete;
  std::string type, value;  // kCondition: the type (lower case) and wanted status
  std::optional<JsonPath> path;
};

absl::StatusOr<Condition> ParseFor(const std::string& spec) {
  Condition c;
  if (spec == "delete") return c;
  if (spec.rfind("condition=", 0) == 0) {
    c.kind = Condition::kCondition;
    std::string rest = spec.substr(10);
    c.value = "true";
    if (auto eq = rest.find('='); eq != std::string::npos) {
      c.value = absl::AsciiStrToLower(rest.substr(eq + 1));
      rest.resize(eq);
    }
    c.type = absl::AsciiStrToLower(rest);
    if (!c.type.empty()) return c;
  }
  if (spec.rfind("jsonpath=", 0) == 0) {
    c.kind = Condition::kJsonPath;
    const std::string rest = spec.substr(9);
    // The value follows the template's closing brace: {.status.phase}=Running.
    const size_t close = rest.rfind('}');
    const size_t eq = rest.find('=', close == std::string::npos ? 0 : close);
    if (eq == std::string::npos) {
      return UserError("error: jsonpath wait format must be --for=jsonpath='{.status.readyReplicas}'=3");
    }
    auto path = JsonPath::ParseRelaxed(rest.substr(0, eq));
    if (!path.ok()) return UserError("error: " + std::string(path.status().message()));
    c.path = std::move(*path);
    c.value = rest.substr(eq + 1);
    return c;
  }
  return UserError(fmt::format(
      "error: unrecognized condition: \"{}\"; want delete, condition=TYPE[=VALUE] or "
      "jsonpath='{{PATH}}'=VALUE",
      spec));
}

bool Met(const Condition& c, const google::protobuf::Message& obj) {
  const json j = api::EncodeJson(obj);
  if (c.kind == Condition::kJsonPath) {
    auto values = c.path->Values(j);
    return values.size() == 1 && JsonPathText(*values[0]) == c.value;
  }
  if (!j.contains("status") || !j["status"].contains("conditions")) return false;
  for (const auto& cond : j["status"]["conditions"]) {
    if (absl::AsciiStrToLower(cond.value("type", "")) == c.type) {
      return absl::AsciiStrToLower(cond.value("status", "")) == c.value;
    }
  }
  return false;
}

}  // namespace

absl::Status Wait(Session& s, const std::vector<std::string>& args, const WaitFlags& f) {
  if (f.for_.empty()) return UserError("error: --for must be set");
  MKUBE_ASSIGN_OR_RETURN(const Condition cond, ParseFor(f.for_));
  MKUBE_ASSIGN_OR_RETURN(const auto timeout, DurationFlag(f.timeout, "--timeout"));
  MKUBE_ASSIGN_OR_RETURN(auto targets, ParseTargets(args, f.labels.empty() && !f.all));
  // Types only: every object of the type selected now.
  std::vector<Target> objects;
  for (const auto& t : targets) {
    if (!t.name.empty()) {
      objects.push_back(t);
      continue;
    }
    MKUBE_ASSIGN_OR_RETURN(auto list, s.Worded(s.res().List(*t.kind, s.ns(), f.labels, "")));
    for (const auto& i : list.items) objects.push_back({t.kind, api::MetaOf(*i).name()});
  }
  if (objects.empty()) return UserError("error: no matching resources found");
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (const auto& t : objects) {
    const std::string what = KindName(*t.kind) + "/" + t.name;
    for (;;) {
      auto obj = s.res().Get(*t.kind, s.ns(), t.name);
      if (cond.kind == Condition::kDelete) {
        if (!obj.ok() && obj.status().code() == absl::StatusCode::kNotFound) break;
      } else if (!obj.ok()) {
        if (obj.status().code() != absl::StatusCode::kNotFound) return s.Worded(obj.status());
      } else if (Met(cond, **obj)) {
        break;
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        if (!obj.ok() && cond.kind != Condition::kDelete) return s.Worded(obj.status());
        return UserError(fmt::format("error: timed out waiting for the condition on {}/{}",
                                     t.kind->resource, t.name));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    std::cout << what << " condition met\n";
  }
  return absl::OkStatus();
}

}  // namespace mkube::cli
