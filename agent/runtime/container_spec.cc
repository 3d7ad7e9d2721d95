#include "agent/runtime/container_spec.h"

#include <filesystem>

namespace mkube::agent::runtime {
namespace {

constexpr char kDefaultPath[] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// Sets NAME=value in env, replacing an earlier NAME.
void SetEnv(std::vector<std::string>* env, const std::string& name, const std::string& value) {
  const std::string prefix = name + "=";
  for (auto& e : *env) {
    if (e.rfind(prefix, 0) == 0) {
      e = prefix + value;
      return;
    }
  }
  env->push_back(prefix + value);
}

std::string EnvValue(const std::vector<std::string>& env, const std::string& name) {
  const std::string prefix = name + "=";
  for (const auto& e : env) {
    if (e.rfind(prefix, 0) == 0) return e.substr(prefix.size());
  }
  return "";
}

}  // namespace

std::vector<std::string> ContainerArgv(const api::Container& spec, const Image& image) {
  std::vector<std::string> argv;
  if (!spec.command().empty()) {
    argv.assign(spec.command().begin(), spec.command().end());
    argv.insert(argv.end(), spec.args().begin(), spec.args().end());
  } else {
    argv = image.config.entrypoint;
    if (!spec.args().empty()) {
      argv.insert(argv.end(), spec.args().begin(), spec.args().end());
    } else {
      argv.insert(argv.end(), image.config.cmd.begin(), image.config.cmd.end());
    }
  }
  if (!argv.empty() && argv[0].find('/') != std::string::npos && argv[0][0] != '/') {
    argv[0] = (std::filesystem::path(image.root) / argv[0]).string();
  }
  return argv;
}

std::vector<std::string> ContainerEnv(const api::Container& spec, const Image& image,
                                      const std::string& pod_name, const std::string& pod_ip) {
  std::vector<std::string> env = {std::string("PATH=") + kDefaultPath};
  for (const auto& e : image.config.env) {
    const auto eq = e.find('=');
    if (eq != std::string::npos) SetEnv(&env, e.substr(0, eq), e.substr(eq + 1));
  }
  // An image in a folder of the node's puts its programs first (at the root of a container's
  // own filesystem they are in /bin already).
  if (image.root != "/") SetEnv(&env, "PATH", image.root + "/bin:" + EnvValue(env, "PATH"));
  SetEnv(&env, "HOSTNAME", pod_name);
  SetEnv(&env, "POD_IP", pod_ip);
  SetEnv(&env, "IMAGE_ROOT", image.root);
  for (const auto& e : spec.env()) SetEnv(&env, e.name(), e.value());
  return env;
}

std::string ContainerDir(const api::Container& spec, const std::string& pod_root) {
  if (spec.working_dir().empty()) return pod_root;
  return (std::filesystem::path(pod_root) / std::filesystem::path(spec.working_dir()).relative_path())
      .string();
}

}  // namespace mkube::agent::runtime
