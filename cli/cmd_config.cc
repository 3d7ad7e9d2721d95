// config: view, get-contexts, current-context, use-context, set-context — the kubeconfig
// file read and rewritten as kubectl does it.
#include <iostream>

#include "api/printers.h"
#include "base/files.h"
#include "cli/commands.h"
#include "cli/kubeconfig.h"
#include "fmt/format.h"
#include "yaml-cpp/yaml.h"

namespace mkube::cli {
namespace {

absl::StatusOr<YAML::Node> LoadRaw(const std::string& path) {
  try {
    return YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    return UserError(fmt::format("error: no configuration at {}", path));
  } catch (const YAML::Exception& e) {
    return UserError(fmt::format("error: error loading config file \"{}\": {}", path, e.what()));
  }
}

// Written whole to a temporary file next to it, then renamed over it (0600: it holds tokens).
absl::Status Save(const std::string& path, const YAML::Node& root) {
  YAML::Emitter out;
  out << root;
  if (auto st = WriteFileAtomically(path, std::string(out.c_str()) + "\n", 0600); !st.ok()) {
    return UserError("error: " + std::string(st.message()));
  }
  return absl::OkStatus();
}

std::string Str(const YAML::Node& n, const std::string& key) {
  return n && n.IsMap() && n[key] && n[key].IsScalar() ? n[key].as<std::string>() : "";
}

YAML::Node Entry(YAML::Node list, const std::string& name) {
  if (!list || !list.IsSequence()) return YAML::Node(YAML::NodeType::Undefined);
  for (auto item : list) {
    if (Str(item, "name") == name) return item;
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

// Secrets replaced as `kubectl config view` shows them without --raw.
void Redact(YAML::Node root) {
  for (auto c : root["clusters"]) {
    if (c["cluster"] && c["cluster"]["certificate-authority-data"]) {
      c["cluster"]["certificate-authority-data"] = "DATA+OMITTED";
    }
  }
  for (auto u : root["users"]) {
    for (const char* k : {"token", "client-key-data", "client-certificate-data", "password"}) {
      if (u["user"] && u["user"][k]) {
        u["user"][k] = std::string(k) == "client-certificate-data" ? "DATA+OMITTED" : "REDACTED";
      }
    }
  }
}

// Only what the current context uses.
void Minify(YAML::Node root) {
  const std::string current = Str(root, "current-context");
  YAML::Node ctx = Entry(root["contexts"], current);
  const std::string cluster = Str(ctx["context"], "cluster"), user = Str(ctx["context"], "user");
  auto keep = [&](const char* list, const std::string& name) {
    YAML::Node kept(YAML::NodeType::Sequence);
    for (auto item : root[list]) {
      if (Str(item, "name") == name) kept.push_back(item);
    }
    root[list] = kept;
  };
  keep("contexts", current);
  keep("clusters", cluster);
  keep("users", user);
}

}  // namespace

absl::Status ConfigView(const Globals& g, bool raw, bool minify) {
  MKUBE_ASSIGN_OR_RETURN(YAML::Node root, LoadRaw(KubeConfigPath(g.kubeconfig)));
  if (minify) Minify(root);
  if (!raw) Redact(root);
  YAML::Emitter out;
  out << root;
  std::cout << out.c_str() << "\n";
  return absl::OkStatus();
}

absl::Status ConfigGetContexts(const Globals& g, const std::vector<std::string>& names,
                               const std::string& output) {
  MKUBE_ASSIGN_OR_RETURN(YAML::Node root, LoadRaw(KubeConfigPath(g.kubeconfig)));
  const std::string current = Str(root, "current-context");
  api::Table t;
  t.columns = {"CURRENT", "NAME", "CLUSTER", "AUTHINFO", "NAMESPACE"};
  bool failed = false;
  for (const auto& name : names) {
    if (!Entry(root["contexts"], name)) {
      std::cerr << fmt::format("error: context {} not found\n", name);
      failed = true;
    }
  }
  for (auto item : root["contexts"]) {
    const std::string name = Str(item, "name");
    if (!names.empty() && std::find(names.begin(), names.end(), name) == names.end()) continue;
    if (output == "name") {
      std::cout << name << "\n";
      continue;
    }
    t.rows.push_back({name == current ? "*" : "", name, Str(item["context"], "cluster"),
                      Str(item["context"], "user"), Str(item["context"], "namespace")});
  }
  if (output != "name") std::cout << api::RenderTable(t, true, nullptr);
  return failed ? Reported() : absl::OkStatus();
}

absl::Status ConfigCurrentContext(const Globals& g) {
  MKUBE_ASSIGN_OR_RETURN(YAML::Node root, LoadRaw(KubeConfigPath(g.kubeconfig)));
  const std::string current = Str(root, "current-context");
  if (current.empty()) return UserError("error: current-context is not set");
  std::cout << current << "\n";
  return absl::OkStatus();
}

absl::Status ConfigUseContext(const Globals& g, const std::string& name) {
  const std::string path = KubeConfigPath(g.kubeconfig);
  MKUBE_ASSIGN_OR_RETURN(YAML::Node root, LoadRaw(path));
  if (!Entry(root["contexts"], name)) {
    return UserError(fmt::format("error: no context exists with the name: \"{}\"", name));
  }
  root["current-context"] = name;
  MKUBE_RETURN_IF_ERROR(Save(path, root));
  std::cout << fmt::format("Switched to context \"{}\".\n", name);
  return absl::OkStatus();
}

absl::Status ConfigSetContext(const Globals& g, const SetContextFlags& f) {
  const std::string path = KubeConfigPath(g.kubeconfig);
  MKUBE_ASSIGN_OR_RETURN(YAML::Node root, LoadRaw(path));
  std::string name = f.name;
  if (f.current) {
    if (!name.empty()) {
      return UserError("error: you cannot specify both a context name and --current");
    }
    name = Str(root, "current-context");
    if (name.empty()) return UserError("error: no current context is set");
  }
  if (name.empty()) return UserError("error: you must specify a non-empty context name or --current");
  YAML::Node entry = Entry(root["contexts"], name);
  const bool created = !entry;
  if (created) {
    entry = YAML::Node(YAML::NodeType::Map);
    entry["name"] = name;
    entry["context"] = YAML::Node(YAML::NodeType::Map);
    root["contexts"].push_back(entry);
  }
  if (f.ns) entry["context"]["namespace"] = *f.ns;
  if (f.cluster) entry["context"]["cluster"] = *f.cluster;
  if (f.user) entry["context"]["user"] = *f.user;
  MKUBE_RETURN_IF_ERROR(Save(path, root));
  std::cout << fmt::format("Context \"{}\" {}.\n", name, created ? "created" : "modified");
  return absl::OkStatus();
}

}  // namespace mkube::cli
