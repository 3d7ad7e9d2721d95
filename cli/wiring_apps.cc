// The app management commands' flags: rollout, set and scale.
#include <utility>

#include "CLI/CLI.hpp"
#include "cli/commands.h"
#include "cli/wiring.h"

namespace mkube::cli {

void AddRollout(Wiring& w) {
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
}

void AddSet(Wiring& w) {
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

void AddScale(Wiring& w) {
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

}  // namespace mkube::cli
