#include "api/taint_spec.h"

#include <set>

#include "api/labels.h"
#include "fmt/format.h"

namespace mkube::api {

absl::StatusOr<TaintSpec> ParseTaint(const std::string& spec) {
  static const std::set<std::string> kEffects = {"NoSchedule", "PreferNoSchedule", "NoExecute"};
  auto invalid = [&](const std::string& why) {
    return absl::InvalidArgumentError(why.empty()
                                          ? fmt::format("invalid taint spec: {}", spec)
                                          : fmt::format("invalid taint spec: {}, {}", spec, why));
  };
  TaintSpec t;
  std::string s = spec;
  if (!s.empty() && s.back() == '-') {
    t.remove = true;
    s.pop_back();
  }
  std::string kv = s;
  if (auto colon = s.find(':'); colon != std::string::npos) {
    kv = s.substr(0, colon);
    t.effect = s.substr(colon + 1);
    if (t.effect.empty()) return invalid("");
  } else if (!t.remove) {
    return invalid("");
  }
  if (auto eq = kv.find('='); eq != std::string::npos) {
    t.key = kv.substr(0, eq);
    t.value = kv.substr(eq + 1);
  } else {
    t.key = kv;
  }
  if (t.key.empty()) return invalid("");
  if (auto st = api::ValidateLabelKey(t.key); !st.ok()) return invalid(std::string(st.message()));
  if (!t.value.empty()) {
    if (auto st = api::ValidateLabelValue(t.value); !st.ok())
      return invalid(std::string(st.message()));
  }
  if (!t.effect.empty() && !kEffects.contains(t.effect)) {
    return invalid(fmt::format("unsupported taint effect \"{}\"", t.effect));
  }
  return t;
}

}  // namespace mkube::api
