#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cli/session.h"

namespace CLI {
class App;
}

// mkubectl's command line: each command's flags wired to the command (commands.h). The
// commands are defined by group, one file each (wiring_<group>.cc), as kubectl's help groups
// them; mkubectl.cc adds them to the app in the order its help lists them.
namespace mkube::cli {

// Opens the session the command needs, then runs it.
template <typename Fn>
absl::Status WithSession(const Globals& g, Fn fn) {
  MKUBE_ASSIGN_OR_RETURN(auto s, Session::Open(g));
  return fn(*s);
}

// What the commands' definitions share: the app, the global flags, the action the parsed
// line selected, and the flags of each command, kept until the process ends.
struct Wiring {
  CLI::App& app;
  const Globals& g;
  std::function<absl::Status()>& action;
  std::vector<std::string>& args;
  std::vector<std::shared_ptr<void>> kept;

  template <typename T>
  T* Keep() {
    auto p = std::make_shared<T>();
    kept.push_back(p);
    return p.get();
  }
};

// Basic commands (wiring_basic.cc): objects from manifests and by name.
void AddApply(Wiring& w);
void AddCreate(Wiring& w);  // with its subcommands job and deployment
void AddRun(Wiring& w);
void AddGet(Wiring& w);
void AddDelete(Wiring& w);
void AddReplace(Wiring& w);
void AddEdit(Wiring& w);
void AddPatch(Wiring& w);
void AddWait(Wiring& w);
void AddExplain(Wiring& w);

// App management (wiring_apps.cc): rollouts and sizes of workloads.
void AddRollout(Wiring& w);
void AddSet(Wiring& w);
void AddScale(Wiring& w);

// Cluster management (wiring_cluster.cc): nodes, scheduling, what the cluster serves.
void AddCordonAndUncordon(Wiring& w);
void AddDrain(Wiring& w);
void AddTaint(Wiring& w);
void AddSchedule(Wiring& w);
void AddClusterInfo(Wiring& w);
void AddVersion(Wiring& w);
void AddApiResources(Wiring& w);
void AddApiVersions(Wiring& w);
void AddImage(Wiring& w);  // image load|ls

// Troubleshooting (wiring_troubleshooting.cc): what pods do and use.
void AddDescribe(Wiring& w);
void AddLogs(Wiring& w);
void AddExec(Wiring& w);
void AddPortForward(Wiring& w);
void AddTop(Wiring& w);

// Settings (wiring_settings.cc): kubeconfig, labels and annotations, shell completion.
void AddConfig(Wiring& w);
void AddLabelAndAnnotate(Wiring& w);
void AddCompletion(Wiring& w);

}  // namespace mkube::cli
