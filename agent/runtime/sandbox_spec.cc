#include "agent/runtime/sandbox_spec.h"

#include "nlohmann/json.hpp"

namespace mkube::agent::runtime {

nlohmann::json ToJson(const Identity& id) {
  return {{"uid", id.uid},
          {"gid", id.gid},
          {"groups", id.groups},
          {"noNewPrivs", id.no_new_privs},
          {"capabilities", id.capabilities},
          {"keepAll", id.keep_all},
          {"limitCapabilities", id.limit_capabilities}};
}

Identity IdentityFromJson(const nlohmann::json& j) {
  Identity id;
  if (!j.is_object()) return id;
  id.uid = j.value("uid", int64_t{-1});
  id.gid = j.value("gid", int64_t{-1});
  id.groups = j.value("groups", std::vector<int64_t>{});
  id.no_new_privs = j.value("noNewPrivs", false);
  id.capabilities = j.value("capabilities", std::vector<int>{});
  id.keep_all = j.value("keepAll", false);
  id.limit_capabilities = j.value("limitCapabilities", false);
  return id;
}

nlohmann::json ToJson(const SandboxSpec& spec) {
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& s : spec.steps) {
    steps.push_back({{"kind", static_cast<int>(s.kind)},
                     {"source", s.source},
                     {"target", s.target},
                     {"readOnly", s.read_only}});
  }
  return {{"isolated", spec.isolated},
          {"root", spec.root},
          {"imageLayers", spec.image_layers},
          {"hostname", spec.hostname},
          {"steps", steps},
          {"readOnlyRoot", spec.read_only_root},
          {"identity", ToJson(spec.identity)},
          {"cgroups", spec.cgroups},
          {"memoryCgroup", spec.memory_cgroup},
          {"joinPidNs", spec.join_pid_ns}};
}

bool SandboxFromJson(const nlohmann::json& j, SandboxSpec* out, std::string* error) {
  if (!j.is_object() || !j.contains("steps") || !j["steps"].is_array()) {
    *error = "a sandbox must be an object with a list of steps";
    return false;
  }
  SandboxSpec spec;
  try {
    spec.isolated = j.value("isolated", false);
    spec.root = j.value("root", "");
    spec.image_layers = j.value("imageLayers", std::vector<std::string>{});
    spec.hostname = j.value("hostname", "");
    spec.read_only_root = j.value("readOnlyRoot", false);
    spec.identity = IdentityFromJson(j.value("identity", nlohmann::json::object()));
    spec.cgroups = j.value("cgroups", std::vector<std::string>{});
    spec.memory_cgroup = j.value("memoryCgroup", "");
    spec.join_pid_ns = j.value("joinPidNs", "");
    for (const auto& s : j["steps"]) {
      const int kind = s.at("kind").get<int>();
      if (kind < 0 || kind > static_cast<int>(MountStep::Kind::kDevice)) {
        *error = "unknown sandbox step kind " + std::to_string(kind);
        return false;
      }
      spec.steps.push_back({static_cast<MountStep::Kind>(kind), s.at("source").get<std::string>(),
                            s.at("target").get<std::string>(), s.value("readOnly", false)});
    }
  } catch (const nlohmann::json::exception& e) {
    *error = std::string("bad sandbox: ") + e.what();
    return false;
  }
  if (spec.isolated && spec.root.empty()) {
    *error = "sandbox without a root";
    return false;
  }
  *out = std::move(spec);
  return true;
}

}  // namespace mkube::agent::runtime
