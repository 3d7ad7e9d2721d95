// label, annotate, taint, cordon, uncordon, scale, set image: changes to objects in place.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <optional>
#include <thread>

#include "absl/strings/match.h"
#include "api/codec.h"
#include "api/labels.h"
#include "api/object.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "fmt/format.h"
#include "proto/api/apps.pb.h"
#include "proto/api/core.pb.h"

namespace mkube::cli {
namespace {

// Whether a write failed only because the object changed after it was read (its
// resourceVersion no longer current): read again and retry, as client-go's RetryOnConflict.
bool ChangedMeanwhile(const absl::Status& st) {
  return absl::StartsWith(st.message(), "Error from server (Conflict): Operation cannot be fulfilled");
}

// Runs `one` (a read, a change, a write conditional on what was read) on every target, again
// when another writer came between its read and its write; a failure is printed and the
// others still run.
template <typename Fn>
absl::Status ForEach(const std::vector<Target>& targets, Fn one) {
  bool failed = false;
  for (const auto& t : targets) {
    absl::Status st = one(t);
    for (int retry = 0; retry < 5 && ChangedMeanwhile(st); ++retry) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10 << retry));
      st = one(t);
    }
    if (!st.ok()) {
      std::cerr << st.message() << "\n";
      failed = true;
    }
  }
  return failed ? Reported() : absl::OkStatus();
}

// A pod's spec, or the one in a workload's pod template; null for kinds without one.
api::PodSpec* MutablePodSpec(const api::KindInfo& kind, google::protobuf::Message* obj) {
  if (kind.kind == "Pod") return static_cast<api::Pod*>(obj)->mutable_spec();
  if (kind.kind == "Deployment") {
    return static_cast<api::Deployment*>(obj)->mutable_spec()->mutable_template_()->mutable_spec();
  }
  if (kind.kind == "ReplicaSet") {
    return static_cast<api::ReplicaSet*>(obj)->mutable_spec()->mutable_template_()->mutable_spec();
  }
  if (kind.kind == "DaemonSet") {
    return static_cast<api::DaemonSet*>(obj)->mutable_spec()->mutable_template_()->mutable_spec();
  }
  if (kind.kind == "Job") {
    return static_cast<api::Job*>(obj)->mutable_spec()->mutable_template_()->mutable_spec();
  }
  return nullptr;
}

}  // namespace

absl::Status Relabel(Session& s, const std::vector<std::string>& args, bool overwrite,
                     bool annotations) {
  const char* field = annotations ? "annotations" : "labels";
  const char* verb = annotations ? "annotated" : "labeled";
  std::vector<std::string> objs;
  std::map<std::string, std::optional<std::string>> changes;
  for (const auto& a : args) {
    if (a.size() > 1 && a.back() == '-' && a.find('=') == std::string::npos) {
      changes[a.substr(0, a.size() - 1)] = std::nullopt;
    } else if (auto eq = a.find('='); eq != std::string::npos) {
      const std::string key = a.substr(0, eq), value = a.substr(eq + 1);
      if (!annotations) {
        if (auto st = api::ValidateLabelKey(key); !st.ok()) {
          return UserError(
              fmt::format("error: invalid label spec: {}: {}", a, std::string(st.message())));
        }
        if (auto st = api::ValidateLabelValue(value); !st.ok()) {
          return UserError(
              fmt::format("error: invalid label value: \"{}\": {}", a, std::string(st.message())));
        }
      }
      changes[key] = value;
    } else {
      objs.push_back(a);
    }
  }
  if (changes.empty()) {
    return UserError(fmt::format("error: at least one {} update is required",
                                 annotations ? "annotation" : "label"));
  }
  MKUBE_ASSIGN_OR_RETURN(auto targets, ParseTargets(objs, true));
  auto one = [&](const Target& t) -> absl::Status {
    MKUBE_ASSIGN_OR_RETURN(auto obj, s.Worded(s.res().Get(*t.kind, s.ns(), t.name)));
    const auto& meta = api::MetaOf(*obj);
    const auto& current = annotations ? meta.annotations() : meta.labels();
    json patch;
    patch["metadata"][field] = json::object();
    bool only_removals = true;
    for (const auto& [k, v] : changes) {
      auto it = current.find(k);
      if (v) {
        only_removals = false;
        if (it != current.end() && it->second != *v && !overwrite) {
          return UserError(fmt::format(
              "error: '{}' already has a value ({}), and --overwrite is false", k, it->second));
        }
        patch["metadata"][field][k] = *v;
      } else {
        if (it == current.end()) {
          std::cerr << fmt::format("{} \"{}\" not found.\n", annotations ? "annotation" : "label",
                                   k);
          continue;
        }
        patch["metadata"][field][k] = nullptr;
      }
    }
    patch["metadata"]["resourceVersion"] = meta.resource_version();
    MKUBE_RETURN_IF_ERROR(s.Worded(s.res().Patch(*t.kind, s.ns(), t.name, patch.dump())).status());
    std::cout << KindName(*t.kind) << "/" << t.name << " "
              << (only_removals ? (annotations ? "annotated" : "unlabeled") : verb) << "\n";
    return absl::OkStatus();
  };
  return ForEach(targets, one);
}

absl::Status Taint(Session& s, const std::vector<std::string>& args, bool overwrite) {
  std::vector<std::string> objs;
  std::vector<TaintSpec> specs;
  for (const auto& a : args) {
    if (a.find(':') != std::string::npos || a.find('=') != std::string::npos ||
        (a.size() > 1 && a.back() == '-')) {
      auto spec = ParseTaint(a);
      if (!spec.ok()) return UserError("error: " + std::string(spec.status().message()));
      specs.push_back(*spec);
    } else {
      objs.push_back(a);
    }
  }
  if (specs.empty()) return UserError("error: at least one taint update is required");
  MKUBE_ASSIGN_OR_RETURN(auto targets, ParseTargets(objs, true));
  for (const auto& t : targets) {
    if (t.kind->kind != "Node") return UserError("error: taints can only be applied to nodes");
  }
  auto one = [&](const Target& t) -> absl::Status {
    MKUBE_ASSIGN_OR_RETURN(auto obj, s.Worded(s.res().Get(*t.kind, "", t.name)));
    auto node = std::static_pointer_cast<api::Node>(obj);
    std::vector<api::Taint> taints(node->spec().taints().begin(), node->spec().taints().end());
    bool added = false, removed = false;
    for (const auto& spec : specs) {
      if (spec.remove) {
        auto before = taints.size();
        std::erase_if(taints, [&](const api::Taint& x) {
          return x.key() == spec.key && (spec.effect.empty() || x.effect() == spec.effect);
        });
        if (taints.size() == before) {
          return UserError(fmt::format("error: taint \"{}\" not found",
                                       spec.key + (spec.effect.empty() ? "" : ":" + spec.effect)));
        }
        removed = true;
        continue;
      }
      auto it = std::find_if(taints.begin(), taints.end(), [&](const api::Taint& x) {
        return x.key() == spec.key && x.effect() == spec.effect;
      });
      if (it != taints.end() && !overwrite) {
        return UserError(fmt::format(
            "error: node {} already has {} taint(s) with same effect(s) and --overwrite is false",
            t.name, spec.key));
      }
      api::Taint nt;
      nt.set_key(spec.key);
      nt.set_value(spec.value);
      nt.set_effect(spec.effect);
      if (it != taints.end()) {
        *it = nt;
      } else {
        taints.push_back(nt);
      }
      added = true;
    }
    json patch;
    patch["metadata"]["resourceVersion"] = node->metadata().resource_version();
    patch["spec"]["taints"] = json::array();
    for (const auto& x : taints) patch["spec"]["taints"].push_back(api::EncodeJson(x));
    MKUBE_RETURN_IF_ERROR(s.Worded(s.res().Patch(*t.kind, "", t.name, patch.dump())).status());
    std::cout << "node/" << t.name << " "
              << (added ? (removed ? "modified" : "tainted") : "untainted") << "\n";
    return absl::OkStatus();
  };
  return ForEach(targets, one);
}

absl::Status Cordon(Session& s, const std::vector<std::string>& nodes, bool unschedulable) {
  const api::KindInfo* kind = api::FindResource("nodes");
  std::vector<Target> targets;
  for (const auto& n : nodes) targets.push_back({kind, n});
  const char* verb = unschedulable ? "cordoned" : "uncordoned";
  return ForEach(targets, [&](const Target& t) -> absl::Status {
    MKUBE_ASSIGN_OR_RETURN(auto obj, s.Worded(s.res().Get(*kind, "", t.name)));
    if (static_cast<const api::Node&>(*obj).spec().unschedulable() == unschedulable) {
      std::cout << "node/" << t.name << " already " << verb << "\n";
      return absl::OkStatus();
    }
    json patch;
    patch["spec"]["unschedulable"] = unschedulable ? json(true) : json(nullptr);
    MKUBE_RETURN_IF_ERROR(s.Worded(s.res().Patch(*kind, "", t.name, patch.dump()).status()));
    std::cout << "node/" << t.name << " " << verb << "\n";
    return absl::OkStatus();
  });
}

absl::Status Scale(Session& s, const std::vector<std::string>& args, int replicas) {
  if (replicas < 0) {
    return UserError(
        "error: The --replicas=COUNT flag is required, and COUNT must be greater than or equal to "
        "0");
  }
  MKUBE_ASSIGN_OR_RETURN(auto targets, ParseTargets(args, true));
  return ForEach(targets, [&](const Target& t) -> absl::Status {
    json patch;
    patch["spec"]["replicas"] = replicas;
    MKUBE_RETURN_IF_ERROR(
        s.Worded(s.res().Patch(*t.kind, s.ns(), t.name, patch.dump(), "scale").status()));
    std::cout << KindName(*t.kind) << "/" << t.name << " scaled\n";
    return absl::OkStatus();
  });
}

absl::Status SetImage(Session& s, const std::vector<std::string>& args) {
  std::vector<std::string> objs;
  std::map<std::string, std::string> images;
  for (const auto& a : args) {
    if (auto eq = a.find('='); eq != std::string::npos) {
      images[a.substr(0, eq)] = a.substr(eq + 1);
    } else {
      objs.push_back(a);
    }
  }
  if (images.empty()) return UserError("error: at least one image update is required");
  MKUBE_ASSIGN_OR_RETURN(auto targets, ParseTargets(objs, true));
  return ForEach(targets, [&](const Target& t) -> absl::Status {
    MKUBE_ASSIGN_OR_RETURN(auto obj, s.Worded(s.res().Get(*t.kind, s.ns(), t.name)));
    api::PodSpec* spec = MutablePodSpec(*t.kind, obj.get());
    if (!spec) return UserError(fmt::format("error: {} has no pod template", KindName(*t.kind)));
    for (const auto& [container, image] : images) {
      bool found = false;
      for (auto& c : *spec->mutable_containers()) {
        if (container == "*" || c.name() == container) {
          c.set_image(image);
          found = true;
        }
      }
      if (!found) {
        return UserError(fmt::format("error: unable to find container named \"{}\"", container));
      }
    }
    json patch;
    json containers = json::array();
    for (const auto& c : spec->containers()) containers.push_back(api::EncodeJson(c));
    if (t.kind->kind == "Pod") {
      patch["spec"]["containers"] = containers;
    } else {
      patch["spec"]["template"]["spec"]["containers"] = containers;
    }
    patch["metadata"]["resourceVersion"] = api::MetaOf(*obj).resource_version();
    MKUBE_RETURN_IF_ERROR(s.Worded(s.res().Patch(*t.kind, s.ns(), t.name, patch.dump()).status()));
    std::cout << KindName(*t.kind) << "/" << t.name << " image updated\n";
    return absl::OkStatus();
  });
}

}  // namespace mkube::cli
