#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cli/session.h"
#include "proto/api/core.pb.h"

// mkubectl's commands. Each prints what kubectl prints and returns the error line to show
// (UserError) or Reported() when it printed its errors itself.
namespace mkube::cli {

absl::Status Apply(Session& s, const std::vector<std::string>& files, bool create_only);
// apply --server-side: the server merges each configuration and records `field_manager` as
// the manager of the fields it sets; fields other managers set otherwise are conflicts unless
// `force_conflicts`.
struct ServerSideFlags {
  std::string field_manager = "mkubectl";
  bool force_conflicts = false;
};
absl::Status ApplyServerSide(Session& s, const std::vector<std::string>& files,
                             const ServerSideFlags& f);

struct CreateJobFlags {
  std::string image, from;
  std::vector<std::string> command;  // after --
};
// create job NAME --image=IMAGE [-- COMMAND...] | --from=cronjob/NAME
absl::Status CreateJob(Session& s, const std::vector<std::string>& args, const CreateJobFlags& f);
struct CreateDeploymentFlags {
  std::vector<std::string> images;
  int replicas = 1;
  int port = -1;
  std::vector<std::string> command;  // after --
};
// create deployment NAME --image=IMAGE... [--replicas=N] [--port=N] [-- COMMAND...]
absl::Status CreateDeployment(Session& s, const std::vector<std::string>& args,
                              const CreateDeploymentFlags& f);
struct RunFlags {
  std::string image, restart = "Always";
  std::vector<std::string> labels, env;
  int port = -1;
  bool command = false;              // the words after -- are the command, not its args
  std::vector<std::string> args;     // after --
};
// run NAME --image=IMAGE [--restart=...] [--labels=...] [--env=...] [--port=N] [-- ARGS...]
absl::Status RunPod(Session& s, const std::vector<std::string>& names, const RunFlags& f);

struct DeleteFlags {
  std::vector<std::string> files;
  std::string labels, fields;
  bool all = false, force = false, wait = true, ignore_not_found = false;
  int64_t grace = -1;
  std::string timeout = "0s";
  std::string cascade = "background";
};
absl::Status Delete(Session& s, const std::vector<std::string>& args, const DeleteFlags& f);

// config: the kubeconfig itself (no apiserver is asked).
struct SetContextFlags {
  std::string name;
  bool current = false;
  std::optional<std::string> ns, cluster, user;
};
absl::Status ConfigView(const Globals& g, bool raw, bool minify);
absl::Status ConfigGetContexts(const Globals& g, const std::vector<std::string>& names,
                               const std::string& output);
absl::Status ConfigCurrentContext(const Globals& g);
absl::Status ConfigUseContext(const Globals& g, const std::string& name);
absl::Status ConfigSetContext(const Globals& g, const SetContextFlags& f);

struct WaitFlags {
  std::string for_, labels, timeout = "30s";
  bool all = false;
};
absl::Status Wait(Session& s, const std::vector<std::string>& args, const WaitFlags& f);

// The pod "NAME", "pod/NAME" or a controller's "TYPE/NAME" names (for a controller, one of
// its pods, running and ready first, as kubectl picks it).
absl::StatusOr<api::Pod> ResolvePod(Session& s, const std::string& arg);

struct PortForwardFlags {
  std::vector<std::string> addresses = {"localhost"};
};
// port-forward TYPE/NAME [LOCAL:]REMOTE...: until interrupted.
absl::Status PortForward(Session& s, const std::vector<std::string>& args,
                         const PortForwardFlags& f);

// replace -f FILE [--force]: each object replaced whole (--force: deleted and created again).
absl::Status Replace(Session& s, const std::vector<std::string>& files, bool force);
// edit TYPE NAME: the object's YAML in $KUBE_EDITOR / $EDITOR / vi, then replaced.
absl::Status Edit(Session& s, const std::vector<std::string>& args);
absl::Status ApiVersions();

struct TopFlags {
  std::string labels, fields, sort_by;
  bool all_namespaces = false, no_headers = false, containers = false, sum = false,
       show_capacity = false;
};
// top nodes|pods [NAME]: CPU and memory from metrics.k8s.io.
absl::Status TopNodes(Session& s, const std::vector<std::string>& names, const TopFlags& f);
absl::Status TopPods(Session& s, const std::vector<std::string>& names, const TopFlags& f);

struct ImageLoadFlags {
  std::vector<std::string> nodes;  // empty: every node that runs pods
};
// image load FILE|-: a docker save archive or an OCI image layout into the nodes' stores.
absl::Status ImageLoad(Session& s, const std::string& file, const ImageLoadFlags& f);
struct ImageListFlags {
  std::vector<std::string> nodes;
  bool no_headers = false;
};
// image ls: each node's images, from its status.
absl::Status ImageList(Session& s, const ImageListFlags& f);
struct ImageInspectFlags {
  std::vector<std::string> nodes;  // empty: every node that runs pods and holds the image
};
// image inspect IMAGE: what the image says of itself on each node that holds it (as crictl
// inspecti): its names, size, platform, Entrypoint, Cmd, Env, User, WorkingDir, exposed ports.
absl::Status ImageInspect(Session& s, const std::string& image, const ImageInspectFlags& f);
// The ports the image `image` exposes ("80/tcp") as node `node` holds it; empty when the node
// cannot say within a moment (describe shows them beside a container's own).
std::vector<std::string> ImageExposedPorts(Session& s, const std::string& node,
                                           const std::string& image);

struct PatchFlags {
  std::string patch, patch_file, type = "strategic", subresource;
};
absl::Status Patch(Session& s, const std::vector<std::string>& args, const PatchFlags& f);

struct GetFlags {
  std::string output, labels, fields, sort_by, raw;
  bool all_namespaces = false, show_labels = false, no_headers = false, watch = false;
  bool show_managed_fields = false;  // -o json|yaml: keep metadata.managedFields
};
absl::Status Get(Session& s, const std::vector<std::string>& args, const GetFlags& f);
// get --raw PATH: a REST path of Kubernetes' API (/api/v1/namespaces/default/pods, ...) as JSON.
absl::Status GetRaw(Session& s, const std::string& path);
absl::Status Describe(Session& s, const std::vector<std::string>& args, const std::string& labels);

absl::Status Relabel(Session& s, const std::vector<std::string>& args, bool overwrite,
                     bool annotations);
absl::Status Taint(Session& s, const std::vector<std::string>& args, bool overwrite);
absl::Status Cordon(Session& s, const std::vector<std::string>& nodes, bool unschedulable);
absl::Status Scale(Session& s, const std::vector<std::string>& args, int replicas);
absl::Status SetImage(Session& s, const std::vector<std::string>& args);

struct DrainFlags {
  bool ignore_daemonsets = false, delete_emptydir_data = false, force = false;
  bool disable_eviction = false;  // delete the pods, past any disruption budget
  std::string pod_selector;       // only the node's pods with these labels
  int64_t grace = -1;
  std::string timeout = "0s";
  std::string cascade = "background";
};
absl::Status Drain(Session& s, const std::string& node, const DrainFlags& f);
absl::Status RolloutStatus(Session& s, const std::vector<std::string>& args,
                           const std::string& timeout);
absl::Status RolloutHistory(Session& s, const std::vector<std::string>& args);
absl::Status RolloutUndo(Session& s, const std::vector<std::string>& args, int64_t to_revision);
// rollout pause, resume and restart: `verb` is the subcommand.
absl::Status RolloutControl(Session& s, const std::string& verb,
                            const std::vector<std::string>& args);

struct LogsFlags {
  std::string container, selector;
  bool follow = false, previous = false, prefix = false, timestamps = false;
  int64_t tail = -1;  // all lines (10 per pod with a selector)
  std::string since, since_time;  // a duration ("5m"); an RFC 3339 time
  int64_t limit_bytes = -1;       // no limit
};
absl::Status Logs(Session& s, const std::string& pod, const LogsFlags& f);
struct ExecFlags {
  std::string container;
  bool stdin = false, tty = false;
};
absl::Status Exec(Session& s, const std::string& pod, const std::vector<std::string>& command,
                  const ExecFlags& f);

// Where the pods of the manifests would be scheduled now, and why; exit 1 when one would stay
// Pending. `config` is a KubeSchedulerConfiguration file (empty: the defaults).
absl::Status ScheduleDryRun(Session& s, const std::vector<std::string>& files,
                            const std::string& config);

absl::Status Explain(const std::string& path);
// `commands`: the verbs to offer first.
absl::Status Completion(const std::string& shell, const std::vector<std::string>& commands);
absl::Status ApiResources();

}  // namespace mkube::cli
