#include "cli/kubeconfig.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "base/status.h"
#include "fmt/format.h"
#include "yaml-cpp/yaml.h"

namespace mkube::cli {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(fmt::format("cannot read {}", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The entry of `list` (clusters, users, contexts) named `name`, under `field`.
YAML::Node Named(const YAML::Node& list, const std::string& name, const std::string& field) {
  if (!list || !list.IsSequence()) return YAML::Node();
  for (const auto& item : list) {
    if (item["name"] && item["name"].as<std::string>() == name) return item[field];
  }
  return YAML::Node();
}

std::string Str(const YAML::Node& n, const std::string& key) {
  return n && n[key] && n[key].IsScalar() ? n[key].as<std::string>() : "";
}

// The gRPC API's address, when the cluster's server is the Kubernetes HTTP API beside it (as in
// the kubeconfig up.sh writes, which kubectl reads too): the cluster's extension mkube.io/grpc
// says where. Empty without the extension.
absl::StatusOr<std::string> GrpcAddress(const YAML::Node& cluster, const std::string& path) {
  YAML::Node exts = cluster["extensions"];
  if (!exts || !exts.IsSequence()) return "";
  for (const auto& e : exts) {
    if (Str(e, "name") != kGrpcExtension) continue;
    const std::string grpc = Str(e["extension"], "server");
    if (grpc.empty()) {
      return absl::InvalidArgumentError(fmt::format(
          "error loading config file \"{}\": the extension {} names no server", path,
          kGrpcExtension));
    }
    return grpc;
  }
  return "";
}

// The CA the cluster's server certificate chains to: certificate-authority-data, or the file
// certificate-authority names (relative to the kubeconfig, as kubectl resolves it); empty
// when neither is given.
absl::StatusOr<std::string> ClusterCa(const YAML::Node& cluster, const std::string& path) {
  std::string pem;
  if (const std::string data = Str(cluster, "certificate-authority-data"); !data.empty()) {
    if (!absl::Base64Unescape(data, &pem)) {
      return absl::InvalidArgumentError(fmt::format(
          "error loading config file \"{}\": certificate-authority-data is not base64", path));
    }
  } else if (std::string file = Str(cluster, "certificate-authority"); !file.empty()) {
    if (file[0] != '/') {
      auto dir = path.find_last_of('/');
      if (dir != std::string::npos) file = path.substr(0, dir + 1) + file;
    }
    auto ca = ReadFile(file);
    if (!ca.ok()) {
      return absl::NotFoundError(fmt::format("unable to read certificate-authority {}", file));
    }
    pem = *ca;
  }
  return pem;
}

}  // namespace

std::string KubeConfigPath(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("MKUBECONFIG"); env && *env) return env;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : ".") + "/.mkube/config";
}

absl::StatusOr<KubeConfig> LoadKubeConfig(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) {
    return absl::NotFoundError(fmt::format(
        "no configuration at {}: start a cluster with ./deploy/up.sh, or pass --kubeconfig", path));
  }
  YAML::Node root;
  try {
    root = YAML::Load(*text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        fmt::format("error loading config file \"{}\": {}", path, e.what()));
  }
  KubeConfig cfg;
  cfg.path = path;
  const std::string current = Str(root, "current-context");
  if (current.empty()) {
    return absl::InvalidArgumentError(
        fmt::format("error loading config file \"{}\": no current-context", path));
  }
  YAML::Node context = Named(root["contexts"], current, "context");
  if (!context || !context.IsMap()) {
    return absl::InvalidArgumentError(fmt::format(
        "error loading config file \"{}\": context \"{}\" does not exist", path, current));
  }
  YAML::Node cluster = Named(root["clusters"], Str(context, "cluster"), "cluster");
  YAML::Node user = Named(root["users"], Str(context, "user"), "user");
  if (!cluster || !cluster.IsMap()) {
    return absl::InvalidArgumentError(
        fmt::format("error loading config file \"{}\": cluster \"{}\" does not exist", path,
                    Str(context, "cluster")));
  }
  if (!Str(context, "namespace").empty()) cfg.namespace_ = Str(context, "namespace");
  cfg.server = Str(cluster, "server");
  std::string rest = cfg.server;
  if (absl::StartsWith(rest, "https://")) {
    rest = rest.substr(8);
  } else if (absl::StartsWith(rest, "http://")) {
    rest = rest.substr(7);
    cfg.tls = false;
  }
  if (auto slash = rest.find('/'); slash != std::string::npos) rest.resize(slash);
  if (rest.empty()) {
    return absl::InvalidArgumentError(
        fmt::format("error loading config file \"{}\": the cluster has no server", path));
  }
  cfg.address = rest;
  if (auto grpc = GrpcAddress(cluster, path); !grpc.ok()) {
    return grpc.status();
  } else if (!grpc->empty()) {
    cfg.address = *grpc;
  }
  MKUBE_ASSIGN_OR_RETURN(cfg.ca_pem, ClusterCa(cluster, path));
  if (cfg.tls && cfg.ca_pem.empty()) {
    return absl::InvalidArgumentError(
        fmt::format("error loading config file \"{}\": an https server needs certificate-authority "
                    "or certificate-authority-data",
                    path));
  }
  cfg.token = Str(user, "token");
  if (cfg.token.empty()) {
    if (std::string file = Str(user, "tokenFile"); !file.empty()) {
      auto t = ReadFile(file);
      if (!t.ok()) return absl::NotFoundError(fmt::format("unable to read tokenFile {}", file));
      cfg.token = std::string(absl::StripAsciiWhitespace(*t));
    }
  }
  return cfg;
}

}  // namespace mkube::cli
