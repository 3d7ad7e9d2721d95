// The settings commands' flags: config, label and annotate, completion.
#include <algorithm>

#include "CLI/CLI.hpp"
#include "cli/commands.h"
#include "cli/wiring.h"

namespace mkube::cli {

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

void AddLabelAndAnnotate(Wiring& w) {
  auto* overwrite = w.Keep<bool>();
  for (bool annotate : {false, true}) {
    const std::string what = annotate ? "annotations" : "labels";
    auto* cmd = w.app.add_subcommand(annotate ? "annotate" : "label",
                                     "Update the " + what + " on a resource");
    cmd->add_option("args", w.args, "TYPE NAME KEY_1=VAL_1 ... KEY_N-")->required();
    cmd->add_flag("--overwrite", *overwrite, "Allow " + what + " to be overwritten");
    cmd->callback([&w, overwrite, annotate] {
      w.action = [&w, overwrite, annotate] {
        return WithSession(w.g,
                           [&](Session& s) { return Relabel(s, w.args, *overwrite, annotate); });
      };
    });
  }
}

void AddCompletion(Wiring& w) {
  auto* shell = w.Keep<std::string>();
  auto* completion = w.app.add_subcommand(
      "completion", "Output shell completion code: source <(mkubectl completion bash|zsh)");
  completion->add_option("shell", *shell, "bash or zsh")->required();
  completion->callback([&w, shell] {
    w.action = [&w, shell] {
      std::vector<std::string> commands;
      for (const CLI::App* sub : w.app.get_subcommands({})) commands.push_back(sub->get_name());
      std::sort(commands.begin(), commands.end());
      return Completion(*shell, commands);
    };
  });
}

}  // namespace mkube::cli
