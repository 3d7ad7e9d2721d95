// The cluster management commands' flags: cordon and uncordon, drain, taint, schedule,
// cluster-info, version, api-resources and api-versions.
#include <unistd.h>

#include <iostream>

#include "CLI/CLI.hpp"
#include "api/kinds.h"
#include "cli/commands.h"
#include "cli/wiring.h"

namespace mkube::cli {
namespace {

constexpr char kVersion[] = "v0.1.0";

// Whether the apiserver answers us (a list of namespaces).
absl::Status Reachable(Session& s) {
  return s.Worded(s.res().List(*api::FindResource("namespaces"), "", "", "").status());
}

}  // namespace

void AddCordonAndUncordon(Wiring& w) {
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
}

void AddDrain(Wiring& w) {
  struct State {
    std::string node;
    DrainFlags flags;
  };
  auto* st = w.Keep<State>();
  auto* drain = w.app.add_subcommand("drain", "Drain node in preparation for maintenance");
  drain->add_option("node", st->node, "NODE")->required();
  drain->add_flag("--ignore-daemonsets", st->flags.ignore_daemonsets,
                  "Ignore DaemonSet-managed pods");
  drain->add_flag(
      "--delete-emptydir-data,--delete-local-data", st->flags.delete_emptydir_data,
      "Continue even if there are pods using emptyDir (local data that will be deleted)");
  drain->add_flag("--force", st->flags.force,
                  "Continue even if there are pods that do not declare a controller");
  drain->add_option("--pod-selector", st->flags.pod_selector,
                    "Only the node's pods with these labels");
  drain->add_flag("--disable-eviction", st->flags.disable_eviction,
                  "Delete the pods instead of evicting them, past any PodDisruptionBudget");
  drain->add_option("--grace-period", st->flags.grace,
                    "Seconds given to each pod to terminate gracefully (-1: its own)");
  drain->add_option("--timeout", st->flags.timeout,
                    "How long to wait before giving up (0: infinite)");
  drain->callback([&w, st] {
    w.action = [&w, st] {
      return WithSession(w.g, [&](Session& s) { return Drain(s, st->node, st->flags); });
    };
  });
}

void AddTaint(Wiring& w) {
  auto* overwrite = w.Keep<bool>();
  auto* taint = w.app.add_subcommand("taint", "Update the taints on one or more nodes");
  taint->add_option("args", w.args, "nodes NODE KEY_1=VAL_1:TAINT_EFFECT_1 ... KEY_N-")
      ->required();
  taint->add_flag("--overwrite", *overwrite, "Allow taints to be overwritten");
  taint->callback([&w, overwrite] {
    w.action = [&w, overwrite] {
      return WithSession(w.g, [&](Session& s) { return Taint(s, w.args, *overwrite); });
    };
  });
}

void AddSchedule(Wiring& w) {
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

void AddImage(Wiring& w) {
  struct State {
    std::string file;
    ImageLoadFlags load;
    ImageListFlags list;
    std::string image;
    ImageInspectFlags inspect;
  };
  auto* st = w.Keep<State>();
  auto* image =
      w.app.add_subcommand("image", "Load images into nodes, list and inspect their images");
  image->require_subcommand(1);
  auto* load = image->add_subcommand(
      "load", "Load a docker save archive or an OCI image layout (tar, plain or gzip'd) into nodes");
  load->add_option("file", st->file, "FILE, or - for standard input")->required();
  load->add_option("--nodes", st->load.nodes, "Only these nodes (default: every node that runs pods)")
      ->delimiter(',');
  load->callback([&w, st] {
    w.action = [&w, st] {
      return WithSession(w.g, [&](Session& s) { return ImageLoad(s, st->file, st->load); });
    };
  });
  auto* ls = image->add_subcommand("ls", "List the images each node holds");
  ls->alias("list");
  ls->add_option("--nodes", st->list.nodes, "Only these nodes")->delimiter(',');
  ls->add_flag("--no-headers", st->list.no_headers, "Don't print headers");
  ls->callback([&w, st] {
    w.action = [&w, st] {
      return WithSession(w.g, [&](Session& s) { return ImageList(s, st->list); });
    };
  });
  auto* inspect = image->add_subcommand("inspect", "Show an image's config as nodes hold it");
  inspect->add_option("image", st->image, "IMAGE, as a pod names it")->required();
  inspect->add_option("--nodes", st->inspect.nodes, "Only these nodes (default: every node that holds it)")
      ->delimiter(',');
  inspect->callback([&w, st] {
    w.action = [&w, st] {
      return WithSession(w.g,
                         [&](Session& s) { return ImageInspect(s, st->image, st->inspect); });
    };
  });
}

void AddClusterInfo(Wiring& w) {
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
}

void AddVersion(Wiring& w) {
  auto* client_only = w.Keep<bool>();
  auto* version =
      w.app.add_subcommand("version", "Print the client and server version information");
  version->add_flag("--client", *client_only, "Only the client version");
  version->callback([&w, client_only] {
    w.action = [&w, client_only] {
      std::cout << "Client Version: " << kVersion << "\n";
      if (*client_only) return absl::OkStatus();
      return WithSession(w.g, [](Session& s) {
        MKUBE_RETURN_IF_ERROR(Reachable(s));
        std::cout << "Server Version: " << kVersion << "\n";
        return absl::OkStatus();
      });
    };
  });
}

void AddApiResources(Wiring& w) {
  auto* resources =
      w.app.add_subcommand("api-resources", "Print the supported API resources on the server");
  resources->callback([&w] { w.action = [] { return ApiResources(); }; });
}

void AddApiVersions(Wiring& w) {
  w.app
      .add_subcommand(
          "api-versions",
          "Print the supported API versions on the server, in the form of \"group/version\"")
      ->callback([&w] { w.action = [] { return ApiVersions(); }; });
}

}  // namespace mkube::cli
