// The troubleshooting commands' flags: describe, logs, exec, port-forward and top.
#include "CLI/CLI.hpp"
#include "cli/commands.h"
#include "cli/wiring.h"

namespace mkube::cli {

void AddDescribe(Wiring& w) {
  auto* labels = w.Keep<std::string>();
  auto* describe = w.app.add_subcommand(
      "describe", "Show details of a specific resource or group of resources");
  describe->add_option("args", w.args, "TYPE [NAME...] | TYPE/NAME...")->required();
  describe->add_option("-l,--selector", *labels, "Label selector");
  describe->callback([&w, labels] {
    w.action = [&w, labels] {
      return WithSession(w.g, [&](Session& s) { return Describe(s, w.args, *labels); });
    };
  });
}

void AddLogs(Wiring& w) {
  struct State {
    std::string pod;
    LogsFlags flags;
  };
  auto* st = w.Keep<State>();
  auto* logs = w.app.add_subcommand("logs", "Print the logs for a container in a pod");
  logs->add_option("pod", st->pod, "POD | pod/POD");
  logs->add_option("-l,--selector", st->flags.selector, "The pods with these labels");
  logs->add_flag("--prefix", st->flags.prefix, "Start each line with [pod/NAME/CONTAINER]");
  logs->add_option("-c,--container", st->flags.container, "The container (default: the first)");
  logs->add_flag("-f,--follow", st->flags.follow, "Keep streaming the log as it grows");
  logs->add_option("--tail", st->flags.tail,
                   "Lines of recent log to show (-1: all; 10 per pod with a selector)");
  logs->add_flag("-p,--previous", st->flags.previous,
                 "The previous instance of the container, if it restarted");
  logs->add_flag("--timestamps", st->flags.timestamps, "Start each line with when it was written");
  logs->add_option("--since", st->flags.since, "Only what was written in the last 5s, 2m, 3h...");
  logs->add_option("--since-time", st->flags.since_time,
                   "Only what was written at or after this RFC 3339 time");
  logs->add_option("--limit-bytes", st->flags.limit_bytes, "At most this many bytes per container");
  logs->callback([&w, st] {
    w.action = [&w, st] {
      return WithSession(w.g, [&](Session& s) { return Logs(s, st->pod, st->flags); });
    };
  });
}

void AddExec(Wiring& w) {
  struct State {
    std::string pod;
    ExecFlags flags;
    std::vector<std::string> command;
  };
  auto* st = w.Keep<State>();
  auto* exec =
      w.app.add_subcommand("exec", "Execute a command in a container: exec POD -- CMD...");
  exec->add_option("pod", st->pod, "POD | pod/POD")->required();
  exec->add_option("command", st->command, "The command and its arguments, after --");
  exec->add_option("-c,--container", st->flags.container, "The container (default: the first)");
  exec->add_flag("-i,--stdin", st->flags.stdin, "Pass stdin to the container");
  exec->add_flag("-t,--tty", st->flags.tty, "Stdin is a TTY");
  exec->callback([&w, st] {
    w.action = [&w, st] {
      return WithSession(w.g, [&](Session& s) { return Exec(s, st->pod, st->command, st->flags); });
    };
  });
}

void AddPortForward(Wiring& w) {
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

}  // namespace mkube::cli
