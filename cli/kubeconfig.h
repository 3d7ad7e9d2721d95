#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace mkube::cli {

// What mkubectl needs from a kubeconfig (Kubernetes' format: clusters, users, contexts and
// current-context): where the apiserver is, how to trust it, who we are, which namespace.
struct KubeConfig {
  std::string path;
  std::string server;   // as written: https://127.0.0.1:6443 or http://... (plaintext)
  std::string address;  // host:port for gRPC (the server's, or the mkube.io/grpc extension's)
  bool tls = true;
  std::string ca_pem;  // from certificate-authority(-data)
  std::string token;
  std::string namespace_ = "default";
};

// The cluster extension that names the gRPC API's host:port when `server` is the Kubernetes
// HTTP API's URL.
inline constexpr char kGrpcExtension[] = "mkube.io/grpc";

// The path to read: --kubeconfig, then $MKUBECONFIG, then ~/.mkube/config.
std::string KubeConfigPath(const std::string& flag);
absl::StatusOr<KubeConfig> LoadKubeConfig(const std::string& path);

}  // namespace mkube::cli
