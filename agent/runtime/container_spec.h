#pragma once

#include <string>
#include <vector>

#include "agent/runtime/image.h"
#include "proto/api/core.pb.h"

namespace mkube::agent::runtime {

// The program and arguments a container runs, combined with its image's as Kubernetes does:
// `command` replaces the image's entrypoint (and drops its cmd), `args` replace its cmd. A
// relative program path with a '/' names a file of the image.
std::vector<std::string> ContainerArgv(const api::Container& spec, const Image& image);

// The container's whole environment: a default PATH, the image's env, the image's bin/ put
// first on PATH, HOSTNAME (the pod's name), POD_IP, IMAGE_ROOT, then the container's env.
std::vector<std::string> ContainerEnv(const api::Container& spec, const Image& image,
                                      const std::string& pod_name, const std::string& pod_ip);

// The folder it runs in: the pod's shared folder, or its workingDir inside that.
std::string ContainerDir(const api::Container& spec, const std::string& pod_root);

}  // namespace mkube::agent::runtime
