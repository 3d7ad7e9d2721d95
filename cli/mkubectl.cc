// mkubectl: the kubectl of mkube. Same verbs, flags, columns and messages as kubectl.
// This file parses the global flags and the line; the commands' flags are wired by group
// (wiring.h) to the commands (commands.h).
#include <csignal>
#include <functional>
#include <iostream>

#include "CLI/CLI.hpp"
#include "cli/args.h"
#include "cli/wiring.h"

namespace mkube::cli {
namespace {

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

  // In the order `mkubectl --help` lists them.
  AddApply(w);
  AddCreate(w);
  AddRun(w);
  AddSchedule(w);
  AddGet(w);
  AddDelete(w);
  AddReplace(w);
  AddEdit(w);
  AddPortForward(w);
  AddApiVersions(w);
  AddConfig(w);
  AddWait(w);
  AddPatch(w);
  AddTop(w);
  AddLabelAndAnnotate(w);
  AddTaint(w);
  AddCordonAndUncordon(w);
  AddScale(w);
  AddDescribe(w);
  AddDrain(w);
  AddLogs(w);
  AddExec(w);
  AddRollout(w);
  AddSet(w);
  AddVersion(w);
  AddClusterInfo(w);
  AddExplain(w);
  AddCompletion(w);
  AddApiResources(w);
  AddImage(w);

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
