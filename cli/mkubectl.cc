// mkubectl: the kubectl of mkube. Same verbs, flags, columns and messages as kubectl.
// This file only wires the command line to the commands (commands.h).
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <functional>
#include <iostream>

#include "CLI/CLI.hpp"
#include "api/kinds.h"
#include "cli/args.h"
#include "cli/commands.h"

namespace mkube::cli {
namespace {

constexpr char kVersion[] = "v0.1.0";

// Opens the session the command needs, then runs it.
template <typename Fn>
absl::Status WithSession(const Globals& g, Fn fn) {
  MKUBE_ASSIGN_OR_RETURN(auto s, Session::Open(g));
  return fn(*s);
}

// Whether the apiserver answers us (a list of namespaces).
absl::Status Reachable(Session& s) {
  return s.Worded(s.res().List(*api::FindResource("namespaces"), "", "", "").status());
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

void AddCreateDeploymentAndRun(Wiring& w, CLI::App* create) {
  struct Deploy {
    CreateDeploymentFlags flags;
    std::string name;
  };
  auto* d = w.Keep<Deploy>();
  auto* cmd = create->add_subcommand("deployment", "Create a deployment with the specified name");
  cmd->alias("deploy");
  cmd->add_option("name", d->name, "NAME");
  cmd->add_option("command", d->flags.command, "The command and its arguments, after --");
  cmd->add_option("--image", d->flags.images, "Image names to run")->take_all();
  cmd->add_option("--replicas", d->flags.replicas, "Number of replicas")->capture_default_str();
  cmd->add_option("--port", d->flags.port, "The port the container exposes");
  cmd->callback([&w, d] {
    w.action = [&w, d] {
      std::vector<std::string> name;
      if (!d->name.empty()) name.push_back(d->name);
      return WithSession(w.g, [&](Session& s) { return CreateDeployment(s, name, d->flags); });
    };
  });

  struct Run {
    RunFlags flags;
    std::string name;
  };
  auto* r = w.Keep<Run>();
  auto* run = w.app.add_subcommand("run", "Run a particular image in a pod");
  run->add_option("name", r->name, "NAME");
  run->add_option("args", r->flags.args, "The container's arguments (or command), after --");
  run->add_option("--image", r->flags.image, "The image for the container");
  run->add_option("--restart", r->flags.restart, "Always, OnFailure or Never")
      ->capture_default_str();
  run->add_option("-l,--labels", r->flags.labels, "Labels, key=value[,key=value]");
  run->add_option("--env", r->flags.env, "Environment variables, NAME=VALUE");
  run->add_option("--port", r->flags.port, "The port the container exposes");
  run->add_flag("--command", r->flags.command, "The words after -- are the command");
  run->callback([&w, r] {
    w.action = [&w, r] {
      std::vector<std::string> name;
      if (!r->name.empty()) name.push_back(r->name);
      return WithSession(w.g, [&](Session& s) { return RunPod(s, name, r->flags); });
    };
  });
}

void AddConfig(Wiring& w) {
  struct Config {
    bool raw = false, minify = false;
    std::string output, use;
    SetContextFlags set;
    std::string ns, cluster, user;
  };
  auto* c = w.Keep<Config>();
  auto* config = w.app.add_subcommand("config", "Modify kubeconfig files");
  config->require_subcommand(1);
  auto* view = config->add_subcommand("view", "Display merged kubeconfig settings");
  view->add_flag("--raw", c->raw, "Show the certificates and tokens too");
  view->add_flag("--minify", c->minify, "Only what the current context uses");
  view->callback([&w, c] { w.action = [&w, c] { return ConfigView(w.g, c->raw, c->minify); }; });
  auto* get_contexts = config->add_subcommand("get-contexts", "Describe one or many contexts");
  get_contexts->add_option("names", w.args, "NAME...");
  get_contexts->add_option("-o,--output", c->output, "name: only the names");
  get_contexts->callback(
      [&w, c] { w.action = [&w, c] { return ConfigGetContexts(w.g, w.args, c->output); }; });
  config->add_subcommand("current-context", "Display the current-context")->callback([&w] {
    w.action = [&w] { return ConfigCurrentContext(w.g); };
  });
  auto* use = config->add_subcommand("use-context", "Set the current-context");
  use->add_option("name", c->use, "CONTEXT_NAME")->required();
  use->callback([&w, c] { w.action = [&w, c] { return ConfigUseContext(w.g, c->use); }; });
  auto* set = config->add_subcommand("set-context", "Set a context entry in kubeconfig");
  set->add_option("name", c->set.name, "CONTEXT_NAME");
  set->add_flag("--current", c->set.current, "Modify the current context");
  auto* ns = set->add_option("--namespace", c->ns, "The context's namespace");
  auto* cluster = set->add_option("--cluster", c->cluster, "The context's cluster");
  auto* user = set->add_option("--user", c->user, "The context's user");
  set->callback([&w, c, ns, cluster, user] {
    if (ns->count()) c->set.ns = c->ns;
    if (cluster->count()) c->set.cluster = c->cluster;
    if (user->count()) c->set.user = c->user;
    w.action = [&w, c] { return ConfigSetContext(w.g, c->set); };
  });
}

void AddTop(Wiring& w) {
  auto* top = w.app.add_subcommand("top", "Display resource (CPU/memory) usage");
  top->require_subcommand(1);
  for (bool pods : {false, true}) {
    auto* f = w.Keep<TopFlags>();
    auto* cmd = top->add_subcommand(pods ? "pod" : "node",
                                    pods ? "Display resource (CPU/memory) usage of pods"
                                         : "Display resource (CPU/memory) usage of nodes");
    cmd->alias(pods ? "pods" : "nodes");
    cmd->alias(pods ? "po" : "no");
    cmd->add_option("name", w.args, "NAME");
    cmd->add_option("-l,--selector", f->labels, "Label selector");
    cmd->add_option("--field-selector", f->fields, "Field selector");
    cmd->add_option("--sort-by", f->sort_by, "cpu or memory: largest first");
    cmd->add_flag("--no-headers", f->no_headers, "Print no header line");
    if (pods) {
      cmd->add_flag("-A,--all-namespaces", f->all_namespaces, "Pods of every namespace");
      cmd->add_flag("--containers", f->containers, "One line per container");
      cmd->add_flag("--sum", f->sum, "Print the sum of the usage");
    } else {
      cmd->add_flag("--show-capacity", f->show_capacity,
                    "Percentages of the capacity rather than of what is allocatable");
    }
    cmd->callback([&w, f, pods] {
      w.action = [&w, f, pods] {
        return WithSession(w.g, [&](Session& s) {
          return pods ? TopPods(s, w.args, *f) : TopNodes(s, w.args, *f);
        });
      };
    });
  }
}

void AddWaitAndPatch(Wiring& w) {
  auto* wf = w.Keep<WaitFlags>();
  auto* wait =
      w.app.add_subcommand("wait", "Wait for a specific condition on one or many resources");
  wait->add_option("args", w.args, "TYPE NAME... | TYPE/NAME...")->required();
  wait->add_option("--for", wf->for_, "delete, condition=TYPE[=VALUE] or jsonpath='{PATH}'=VALUE");
  wait->add_option("-l,--selector", wf->labels, "Label selector");
  wait->add_flag("--all", wf->all, "Every resource of the type in the namespace");
  wait->add_option("--timeout", wf->timeout, "How long to wait, e.g. 30s, 5m")
      ->capture_default_str();
  wait->callback([&w, wf] {
    w.action = [&w, wf] {
      return WithSession(w.g, [&](Session& s) { return Wait(s, w.args, *wf); });
    };
  });

  auto* pf = w.Keep<PatchFlags>();
  auto* patch = w.app.add_subcommand("patch", "Update fields of a resource using a patch");
  patch->add_option("args", w.args, "TYPE NAME | TYPE/NAME")->required();
  patch->add_option("-p,--patch", pf->patch, "The patch to apply, as JSON");
  patch->add_option("--patch-file", pf->patch_file, "A file holding the patch");
  patch->add_option("--type", pf->type, "The type of patch: json, merge or strategic")
      ->capture_default_str();
  patch->add_option("--subresource", pf->subresource, "status or scale: patch that instead");
  patch->callback([&w, pf] {
    w.action = [&w, pf] {
      return WithSession(w.g, [&](Session& s) { return Patch(s, w.args, *pf); });
    };
  });
}

void AddPodAndNodeCommands(Wiring& w) {
  struct State {
    std::string describe_labels, drain_node, logs_pod, exec_pod;
    DrainFlags drain;
    LogsFlags logs;
    ExecFlags exec;
    std::vector<std::string> exec_command;
  };
  auto* st = w.Keep<State>();
  auto* describe = w.app.add_subcommand(
      "describe", "Show details of a specific resource or group of resources");
  describe->add_option("args", w.args, "TYPE [NAME...] | TYPE/NAME...")->required();
  describe->add_option("-l,--selector", st->describe_labels, "Label selector");
  describe->callback([&w, st] {
    w.action = [&w, st] {
      return WithSession(w.g, [&](Session& s) { return Describe(s, w.args, st->describe_labels); });
    };
  });
  auto* drain = w.app.add_subcommand("drain", "Drain node in preparation for maintenance");
  drain->add_option("node", st->drain_node, "NODE")->required();
  drain->add_flag("--ignore-daemonsets", st->drain.ignore_daemonsets,
                  "Ignore DaemonSet-managed pods");
  drain->add_flag(
      "--delete-emptydir-data,--delete-local-data", st->drain.delete_emptydir_data,
      "Continue even if there are pods using emptyDir (local data that will be deleted)");
  drain->add_flag("--force", st->drain.force,
                  "Continue even if there are pods that do not declare a controller");
  drain->add_option("--pod-selector", st->drain.pod_selector,
                    "Only the node's pods with these labels");
  drain->add_flag("--disable-eviction", st->drain.disable_eviction,
                  "Delete the pods instead of evicting them, past any PodDisruptionBudget");
  drain->add_option("--grace-period", st->drain.grace,
                    "Seconds given to each pod to terminate gracefully (-1: its own)");
  drain->add_option("--timeout", st->drain.timeout,
                    "How long to wait before giving up (0: infinite)");
  drain->callback([&w, st] {
    w.action = [&w, st] {
      return WithSession(w.g, [&](Session& s) { return Drain(s, st->drain_node, st->drain); });
    };
  });
  auto* logs = w.app.add_subcommand("logs", "Print the logs for a container in a pod");
  logs->add_option("pod", st->logs_pod, "POD | pod/POD");
  logs->add_option("-l,--selector", st->logs.selector, "The pods with these labels");
  logs->add_flag("--prefix", st->logs.prefix, "Start each line with [pod/NAME/CONTAINER]");
  logs->add_option("-c,--container", st->logs.container, "The container (default: the first)");
  logs->add_flag("-f,--follow", st->logs.follow, "Keep streaming the log as it grows");
  logs->add_option("--tail", st->logs.tail,
                   "Lines of recent log to show (-1: all; 10 per pod with a selector)");
  logs->add_flag("-p,--previous", st->logs.previous,
                 "The previous instance of the container, if it restarted");
  logs->callback([&w, st] {
    w.action = [&w, st] {
      return WithSession(w.g, [&](Session& s) { return Logs(s, st->logs_pod, st->logs); });
    };
  });
  auto* exec =
      w.app.add_subcommand("exec", "Execute a command in a container: exec POD -- CMD...");
  exec->add_option("pod", st->exec_pod, "POD | pod/POD")->required();
  exec->add_option("command", st->exec_command, "The command and its arguments, after --");
  exec->add_option("-c,--container", st->exec.container, "The container (default: the first)");
  exec->add_flag("-i,--stdin", st->exec.stdin, "Pass stdin to the container");
  exec->add_flag("-t,--tty", st->exec.tty, "Stdin is a TTY");
  exec->callback([&w, st] {
    w.action = [&w, st] {
      return WithSession(
          w.g, [&](Session& s) { return Exec(s, st->exec_pod, st->exec_command, st->exec); });
    };
  });
}

void AddRolloutAndSetImage(Wiring& w) {
  struct State {
    std::string timeout = "0s";
    int64_t to_revision = 0;
  };
  auto* st = w.Keep<State>();
  auto* rollout = w.app.add_subcommand("rollout", "Manage the rollout of a resource");
  rollout->require_subcommand(1);
  auto* status = rollout->add_subcommand("status", "Show the status of the rollout");
  status->add_option("args", w.args, "TYPE NAME | TYPE/NAME")->required();
  status->add_option("--timeout", st->timeout, "How long to wait (0: forever)");
  status->callback([&w, st] {
    w.action = [&w, st] {
      return WithSession(w.g, [&](Session& s) { return RolloutStatus(s, w.args, st->timeout); });
    };
  });
  auto* history = rollout->add_subcommand("history", "View the rollout history");
  history->add_option("args", w.args, "TYPE NAME | TYPE/NAME")->required();
  history->callback([&w] {
    w.action = [&w] {
      return WithSession(w.g, [&](Session& s) { return RolloutHistory(s, w.args); });
    };
  });
  auto* undo = rollout->add_subcommand("undo", "Undo a previous rollout");
  undo->add_option("args", w.args, "TYPE NAME | TYPE/NAME")->required();
  undo->add_option("--to-revision", st->to_revision,
                   "The revision to roll back to (0: the previous one)");
  undo->callback([&w, st] {
    w.action = [&w, st] {
      return WithSession(w.g, [&](Session& s) { return RolloutUndo(s, w.args, st->to_revision); });
    };
  });
  for (const auto& [verb, help] : std::vector<std::pair<std::string, std::string>>{
           {"pause", "Mark the provided resource as paused"},
           {"resume", "Resume a paused resource"},
           {"restart", "Restart a resource (its pods are replaced by a rollout)"}}) {
    auto* sub = rollout->add_subcommand(verb, help);
    sub->add_option("args", w.args, "TYPE NAME | TYPE/NAME")->required();
    sub->callback([&w, verb = verb] {
      w.action = [&w, verb] {
        return WithSession(w.g, [&](Session& s) { return RolloutControl(s, verb, w.args); });
      };
    });
  }
  auto* set = w.app.add_subcommand("set", "Set specific features on objects");
  set->require_subcommand(1);
  auto* set_image = set->add_subcommand("image", "Update the image of a pod template");
  set_image
      ->add_option("args", w.args, "TYPE NAME CONTAINER=IMAGE... | TYPE/NAME CONTAINER=IMAGE...")
      ->required();
  set_image->callback([&w] {
    w.action = [&w] { return WithSession(w.g, [&](Session& s) { return SetImage(s, w.args); }); };
  });
}

void AddInformation(Wiring& w) {
  struct State {
    bool client_only = false;
    std::string explain_path, shell;
  };
  auto* st = w.Keep<State>();
  auto* version =
      w.app.add_subcommand("version", "Print the client and server version information");
  version->add_flag("--client", st->client_only, "Only the client version");
  version->callback([&w, st] {
    w.action = [&w, st] {
      std::cout << "Client Version: " << kVersion << "\n";
      if (st->client_only) return absl::OkStatus();
      return WithSession(w.g, [](Session& s) {
        MKUBE_RETURN_IF_ERROR(Reachable(s));
        std::cout << "Server Version: " << kVersion << "\n";
        return absl::OkStatus();
      });
    };
  });
  auto* info = w.app.add_subcommand("cluster-info", "Display cluster information");
  info->callback([&w] {
    w.action = [&w] {
      return WithSession(w.g, [](Session& s) {
        MKUBE_RETURN_IF_ERROR(Reachable(s));
        const bool tty = isatty(STDOUT_FILENO);
        std::cout << (tty ? "\033[0;32mKubernetes control plane\033[0m is running at \033[0;33m"
                          : "Kubernetes control plane is running at ")
                  << s.server() << (tty ? "\033[0m" : "") << "\n\n"
                  << "To further debug and diagnose cluster problems, use 'mkubectl cluster-info "
                     "dump'.\n";
        return absl::OkStatus();
      });
    };
  });
  auto* explain = w.app.add_subcommand(
      "explain", "Get the fields of a resource, or of a field: TYPE[.FIELD...]");
  explain->add_option("path", st->explain_path, "e.g. pod.spec.affinity.nodeAffinity")->required();
  explain->callback([&w, st] { w.action = [st] { return Explain(st->explain_path); }; });
  auto* completion = w.app.add_subcommand(
      "completion", "Output shell completion code: source <(mkubectl completion bash|zsh)");
  completion->add_option("shell", st->shell, "bash or zsh")->required();
  completion->callback([&w, st] {
    w.action = [&w, st] {
      std::vector<std::string> commands;
      for (const CLI::App* sub : w.app.get_subcommands({})) commands.push_back(sub->get_name());
      std::sort(commands.begin(), commands.end());
      return Completion(st->shell, commands);
    };
  });
  auto* resources =
      w.app.add_subcommand("api-resources", "Print the supported API resources on the server");
  resources->callback([&w] { w.action = [] { return ApiResources(); }; });
}

void AddApplyAndCreate(Wiring& w) {
  auto* files = w.Keep<std::vector<std::string>>();
  auto* apply =
      w.app.add_subcommand("apply", "Apply a configuration to a resource by file name or stdin");
  apply
      ->add_option("-f,--filename", *files,
                   "Files, directories or - (stdin) with the configuration")
      ->required();
  apply->callback([&w, files] {
    w.action = [&w, files] {
      return WithSession(w.g, [&](Session& s) { return Apply(s, *files, false); });
    };
  });
  auto* create = w.app.add_subcommand("create", "Create a resource from a file or from stdin");
  create->require_subcommand(0, 1);
  create->add_option("-f,--filename", *files, "Files, directories or - (stdin) with the resources");
  create->callback([&w, files] {
    if (w.action) return;  // a subcommand's
    w.action = [&w, files] {
      if (files->empty()) return UserError("error: must specify one of -f and -k");
      return WithSession(w.g, [&](Session& s) { return Apply(s, *files, true); });
    };
  });
  struct Job {
    CreateJobFlags flags;
    std::string name;
  };
  auto* job = w.Keep<Job>();
  auto* job_cmd = create->add_subcommand("job", "Create a job with the specified name");
  job_cmd->add_option("name", job->name, "NAME");
  job_cmd->add_option("command", job->flags.command, "The command and its arguments, after --");
  job_cmd->add_option("--image", job->flags.image, "Image name to run");
  job_cmd->add_option("--from", job->flags.from,
                      "The resource to create the job from (only cronjob/NAME)");
  job_cmd->callback([&w, job] {
    w.action = [&w, job] {
      std::vector<std::string> names;
      if (!job->name.empty()) names.push_back(job->name);
      return WithSession(w.g, [&](Session& s) { return CreateJob(s, names, job->flags); });
    };
  });
  AddCreateDeploymentAndRun(w, create);

  struct Schedule {
    std::vector<std::string> files;
    std::string config;
    bool dry_run = false;
  };
  auto* sc = w.Keep<Schedule>();
  auto* schedule = w.app.add_subcommand(
      "schedule", "Show where pods would be scheduled now and why, creating nothing");
  schedule->add_option("-f,--filename", sc->files, "Files, directories or - (stdin) with the pods")
      ->required();
  schedule
      ->add_flag("--dry-run", sc->dry_run, "Only show the decision (required: nothing is bound)")
      ->required();
  schedule->add_option("--config", sc->config,
                       "A KubeSchedulerConfiguration to schedule with (default: the defaults)");
  schedule->callback([&w, sc] {
    w.action = [&w, sc] {
      return WithSession(w.g, [&](Session& s) { return ScheduleDryRun(s, sc->files, sc->config); });
    };
  });
}

void AddReplaceAndEdit(Wiring& w) {
  struct Replacing {
    std::vector<std::string> files;
    bool force = false;
  };
  auto* r = w.Keep<Replacing>();
  auto* replace = w.app.add_subcommand("replace", "Replace a resource by file name or stdin");
  replace->add_option("-f,--filename", r->files, "Files, directories or - (stdin)")->required();
  replace->add_flag("--force", r->force, "Delete the resource and create it again");
  replace->callback([&w, r] {
    w.action = [&w, r] {
      return WithSession(w.g, [&](Session& s) { return Replace(s, r->files, r->force); });
    };
  });
  auto* edit = w.app.add_subcommand("edit", "Edit a resource on the server");
  edit->add_option("args", w.args, "TYPE NAME | TYPE/NAME")->required();
  edit->callback([&w] {
    w.action = [&w] { return WithSession(w.g, [&](Session& s) { return Edit(s, w.args); }); };
  });
  auto* pf = w.Keep<PortForwardFlags>();
  auto* forward = w.app.add_subcommand(
      "port-forward", "Forward one or more local ports to a pod: TYPE/NAME [LOCAL:]REMOTE...");
  forward->add_option("args", w.args, "TYPE/NAME [LOCAL_PORT:]REMOTE_PORT...")->required();
  forward->add_option("--address", pf->addresses, "Addresses to listen on (localhost or IPv4)")
      ->delimiter(',');
  forward->callback([&w, pf] {
    w.action = [&w, pf] {
      return WithSession(w.g, [&](Session& s) { return PortForward(s, w.args, *pf); });
    };
  });
  w.app
      .add_subcommand(
          "api-versions",
          "Print the supported API versions on the server, in the form of \"group/version\"")
      ->callback([&w] { w.action = [] { return ApiVersions(); }; });
}

void AddGetAndDelete(Wiring& w) {
  auto* gf = w.Keep<GetFlags>();
  auto* get = w.app.add_subcommand("get", "Display one or many resources");
  get->add_option("args", w.args, "TYPE[.GROUP] [NAME...] | TYPE/NAME... | all");
  get->add_option("-o,--output", gf->output,
                  "Output format: json|yaml|name|wide|jsonpath=TEMPLATE|custom-columns=SPEC");
  get->add_option("--sort-by", gf->sort_by,
                  "Sort list types by this field (a JSONPath expression, e.g. .metadata.name)");
  get->add_option("-l,--selector", gf->labels, "Label selector (=, ==, !=, in, notin, exists)");
  get->add_option("--field-selector", gf->fields, "Field selector (=, ==, !=)");
  get->add_flag("-A,--all-namespaces", gf->all_namespaces, "List across all namespaces");
  get->add_flag("--show-labels", gf->show_labels, "Show all labels as the last column");
  get->add_flag("--no-headers", gf->no_headers, "Don't print headers");
  get->add_flag("-w,--watch", gf->watch, "After listing, watch for changes");
  get->add_option("--raw", gf->raw, "A REST path of the API to get, e.g. /api/v1/nodes");
  get->callback([&w, gf] {
    w.action = [&w, gf] {
      if (!gf->raw.empty()) {
        if (!w.args.empty()) {
          return UserError("error: arguments may not be passed when --raw is specified");
        }
        return WithSession(w.g, [&](Session& s) { return GetRaw(s, gf->raw); });
      }
      if (w.args.empty()) {
        return UserError(
            "You must specify the type of resource to get. Use \"mkubectl api-resources\" "
            "for a complete list of supported resources.");
      }
      return WithSession(w.g, [&](Session& s) { return Get(s, w.args, *gf); });
    };
  });

  auto* df = w.Keep<DeleteFlags>();
  auto* del = w.app.add_subcommand(
      "delete", "Delete resources by file names, stdin, resources and names, or by selector");
  del->add_option("args", w.args, "TYPE NAME... | TYPE/NAME...");
  del->add_option("-f,--filename", df->files, "Files with the resources to delete");
  del->add_option("-l,--selector", df->labels, "Label selector");
  del->add_option("--field-selector", df->fields, "Field selector");
  del->add_flag("--all", df->all, "Delete every resource of the type in the namespace");
  del->add_flag("--force", df->force, "Delete at once, without waiting for the pods to stop");
  del->add_option("--grace-period", df->grace,
                  "Seconds given to the resource to terminate gracefully (-1: its default)");
  del->add_option("--wait", df->wait, "Wait for the resources to be gone before returning")
      ->capture_default_str();
  del->add_option("--timeout", df->timeout, "How long to wait before giving up (0: a week)");
  del->add_option("--cascade", df->cascade,
                  "background: dependents are deleted after the owner; foreground: before it "
                  "(waited for); orphan: they are left")
      ->capture_default_str();
  del->add_flag("--ignore-not-found", df->ignore_not_found,
                "Treat \"resource not found\" as a successful delete");
  del->callback([&w, df] {
    w.action = [&w, df] {
      return WithSession(w.g, [&](Session& s) { return Delete(s, w.args, *df); });
    };
  });
}

void AddLabelsTaintsAndScale(Wiring& w) {
  auto* overwrite = w.Keep<bool>();
  struct Relabeling {
    std::string name, help, args, what;
  };
  for (const Relabeling& r :
       {Relabeling{"label", "Update the labels on a resource", "TYPE NAME KEY_1=VAL_1 ... KEY_N-",
                   "labels"},
        Relabeling{"annotate", "Update the annotations on a resource",
                   "TYPE NAME KEY_1=VAL_1 ... KEY_N-", "annotations"},
        Relabeling{"taint", "Update the taints on one or more nodes",
                   "nodes NODE KEY_1=VAL_1:TAINT_EFFECT_1 ... KEY_N-", "taints"}}) {
    auto* cmd = w.app.add_subcommand(r.name, r.help);
    cmd->add_option("args", w.args, r.args)->required();
    cmd->add_flag("--overwrite", *overwrite, "Allow " + r.what + " to be overwritten");
    cmd->callback([&w, overwrite, name = r.name] {
      w.action = [&w, overwrite, name] {
        return WithSession(w.g, [&](Session& s) {
          if (name == "taint") return Taint(s, w.args, *overwrite);
          return Relabel(s, w.args, *overwrite, name == "annotate");
        });
      };
    });
  }
  for (bool on : {true, false}) {
    auto* cmd = w.app.add_subcommand(
        on ? "cordon" : "uncordon", on ? "Mark node as unschedulable" : "Mark node as schedulable");
    cmd->add_option("nodes", w.args, "NODE...")->required();
    cmd->callback([&w, on] {
      w.action = [&w, on] {
        return WithSession(w.g, [&](Session& s) { return Cordon(s, w.args, on); });
      };
    });
  }
  auto* replicas = w.Keep<int>();
  *replicas = -1;
  auto* scale = w.app.add_subcommand("scale", "Set a new size for a deployment or replica set");
  scale->add_option("args", w.args, "TYPE NAME | TYPE/NAME")->required();
  scale->add_option("--replicas", *replicas, "The new desired number of replicas")->required();
  scale->callback([&w, replicas] {
    w.action = [&w, replicas] {
      return WithSession(w.g, [&](Session& s) { return Scale(s, w.args, *replicas); });
    };
  });
}

int Run(int argc, char** argv) {
  CLI::App app{"mkubectl controls the mkube cluster manager."};
  app.require_subcommand(1);
  // The global flags (-n, --kubeconfig, -s, --token, --request-timeout) anywhere on the line,
  // as kubectl takes them: a subcommand hands what it does not know to the app (subcommands
  // made after this inherit it).
  app.fallthrough();
  app.set_help_all_flag("--help-all", "Help for every command");
  Globals g;
  app.add_option("--kubeconfig", g.kubeconfig,
                 "Path to the kubeconfig file (default $MKUBECONFIG, then ~/.mkube/config)");
  app.add_option("-s,--server", g.server, "The address of the mkube API server");
  app.add_option("--token", g.token, "Bearer token for authentication to the API server");
  app.add_option("-n,--namespace", g.ns, "If present, the namespace scope for this request");
  app.add_option("--request-timeout", g.request_timeout,
                 "How long to wait for a single server request (0: no timeout); e.g. 1s, 2m, 3h");
  std::function<absl::Status()> action;
  std::vector<std::string> args;  // the positional words of most commands
  Wiring w{app, g, action, args, {}};

  AddApplyAndCreate(w);
  AddGetAndDelete(w);
  AddReplaceAndEdit(w);
  AddConfig(w);
  AddWaitAndPatch(w);
  AddTop(w);
  AddLabelsTaintsAndScale(w);
  AddPodAndNodeCommands(w);
  AddRolloutAndSetImage(w);
  AddInformation(w);

  try {
    ParseCommandLine(app, argc, argv);  // CLI11 reports bad flags and --help by throwing
  } catch (const CLI::CallForHelp&) {
    return app.exit(CLI::CallForHelp());
  } catch (const CLI::CallForAllHelp&) {
    return app.exit(CLI::CallForAllHelp());
  } catch (const CLI::ParseError& e) {
    std::cerr << "error: " << e.what() << "\nSee 'mkubectl --help' for usage.\n";
    return 1;
  }
  if (!action) return 0;
  absl::Status st = action();
  if (st.ok()) return 0;
  std::cout.flush();
  if (!st.message().empty()) std::cerr << st.message() << "\n";
  return ExitCodeOf(st);
}

}  // namespace
}  // namespace mkube::cli

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  return mkube::cli::Run(argc, argv);
}
