// apply, create, delete: objects from manifests or by name.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/match.h"
#include "api/codec.h"
#include "api/object.h"
#include "cli/commands.h"
#include "cli/manifests.h"
#include "fmt/format.h"

namespace mkube::cli {
namespace {

constexpr char kLastApplied[] = "kubectl.kubernetes.io/last-applied-configuration";

std::string ReadAll(std::istream& in) {
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

absl::StatusOr<std::vector<Manifest>> ReadManifests(const std::vector<std::string>& files) {
  if (files.empty()) return UserError("error: must specify one of -f and -k");
  std::vector<std::pair<std::string, std::string>> texts;
  for (const auto& f : files) {
    if (f == "-") {
      texts.emplace_back("STDIN", ReadAll(std::cin));
      continue;
    }
    std::error_code ec;
    if (std::filesystem::is_directory(f, ec)) {
      std::vector<std::string> names;
      for (const auto& e : std::filesystem::directory_iterator(f)) {
        const auto ext = e.path().extension();
        if (ext == ".yaml" || ext == ".yml" || ext == ".json") names.push_back(e.path().string());
      }
      std::sort(names.begin(), names.end());
      for (const auto& n : names) {
        std::ifstream in(n);
        texts.emplace_back(n, ReadAll(in));
      }
      continue;
    }
    std::ifstream in(f);
    if (!in) return UserError(fmt::format("error: the path \"{}\" does not exist", f));
    texts.emplace_back(f, ReadAll(in));
  }
  std::vector<Manifest> out;
  for (auto& [source, text] : texts) {
    auto objs = api::DecodeManifests(text);
    if (!objs.ok()) {
      return UserError(fmt::format("error: error validating \"{}\": {}", source,
                                   std::string(objs.status().message())));
    }
    for (auto& o : *objs) out.push_back(Manifest{source, std::move(o)});
  }
  if (out.empty()) return UserError("error: no objects passed to apply");
  return out;
}

absl::StatusOr<std::string> NamespaceFor(Session& s, google::protobuf::Message* obj,
                                         const api::KindInfo& kind) {
  if (!kind.namespaced) return std::string();
  auto* meta = api::MutableMetaOf(obj);
  if (meta->namespace_().empty()) {
    meta->set_namespace_(s.ns());
    return s.ns();
  }
  if (!s.ns_flag().empty() && s.ns_flag() != meta->namespace_()) {
    return UserError(fmt::format(
        "error: the namespace from the provided object \"{}\" does not match the namespace \"{}\". "
        "You must pass '--namespace={}' to perform this operation.",
        meta->namespace_(), s.ns_flag(), meta->namespace_()));
  }
  return meta->namespace_();
}

namespace {

// The manifest as JSON without apiVersion and kind: what apply records and patches with.
json ApplyJson(const google::protobuf::Message& obj) {
  json j = api::EncodeJson(obj);
  j.erase("apiVersion");
  j.erase("kind");
  if (j.contains("metadata")) {
    j["metadata"].erase("namespace");
    if (j["metadata"].contains("annotations")) {
      j["metadata"]["annotations"].erase(kLastApplied);
      if (j["metadata"]["annotations"].empty()) j["metadata"].erase("annotations");
    }
  }
  return j;
}

// Fields the last apply set and this one no longer does: null in the merge patch.
void AddDeletions(const json& last, const json& now, json* patch) {
  if (!last.is_object()) return;
  for (auto it = last.begin(); it != last.end(); ++it) {
    if (!now.contains(it.key())) {
      (*patch)[it.key()] = nullptr;
    } else if (it.value().is_object() && now[it.key()].is_object()) {
      AddDeletions(it.value(), now[it.key()], &(*patch)[it.key()]);
    }
  }
}

// Creates one object, or (apply) brings the live one to the manifest with a 3-way merge patch.
absl::Status ApplyOne(Session& s, Manifest& m, bool create_only) {
  const api::KindInfo& kind = *m.object.info;
  google::protobuf::Message* obj = m.object.message.get();
  MKUBE_ASSIGN_OR_RETURN(const std::string ns, NamespaceFor(s, obj, kind));
  const std::string name = api::MetaOf(*obj).name();
  const std::string label = KindName(kind) + "/" + name;
  const json applied = ApplyJson(*obj);
  if (!create_only) {
    auto live = s.res().Get(kind, ns, name);
    if (live.ok()) {
      const auto& ann = api::MetaOf(**live).annotations();
      auto it = ann.find(kLastApplied);
      json last = it == ann.end() ? json() : json::parse(it->second, nullptr, false);
      if (last == applied) {
        std::cout << label << " unchanged\n";
        return absl::OkStatus();
      }
      json patch = applied;
      AddDeletions(last, applied, &patch);
      patch["metadata"]["annotations"][kLastApplied] = applied.dump();
      MKUBE_RETURN_IF_ERROR(s.Worded(s.res().Patch(kind, ns, name, patch.dump()).status()));
      std::cout << label << " configured\n";
      return absl::OkStatus();
    }
    if (live.status().code() != absl::StatusCode::kNotFound) return s.Worded(live.status());
    (*api::MutableMetaOf(obj)->mutable_annotations())[kLastApplied] = applied.dump();
  }
  auto created = s.res().Create(kind, ns, *obj);
  if (!created.ok()) {
    absl::Status st = created.status();
    if (st.code() == absl::StatusCode::kAlreadyExists ||
        st.code() == absl::StatusCode::kInvalidArgument ||
        st.code() == absl::StatusCode::kNotFound ||
        st.code() == absl::StatusCode::kResourceExhausted ||
        st.code() == absl::StatusCode::kUnknown) {
      st = absl::Status(st.code(), fmt::format("error when creating \"{}\": {}", m.source,
                                               std::string(st.message())));
    }
    return s.Worded(st);
  }
  std::cout << label << " created\n";
  return absl::OkStatus();
}

// kubectl's --cascade values, with its older true/false spellings, as propagation policies.
absl::StatusOr<std::string> PropagationPolicy(const std::string& cascade) {
  if (cascade == "background" || cascade == "true") return "Background";
  if (cascade == "foreground") return "Foreground";
  if (cascade == "orphan" || cascade == "false") return "Orphan";
  return UserError(
      fmt::format("error: invalid cascade value ({}). Must be \"background\", \"foreground\", or "
                  "\"orphan\"",
                  cascade));
}

struct DeleteTarget {
  const api::KindInfo* kind;
  std::string ns, name;
};

// What delete deletes: the objects of the manifests in -f, those named, or those selected.
absl::StatusOr<std::vector<DeleteTarget>> DeleteTargets(Session& s,
                                                        const std::vector<std::string>& args,
                                                        const DeleteFlags& f) {
  std::vector<DeleteTarget> todo;
  if (!f.files.empty()) {
    MKUBE_ASSIGN_OR_RETURN(auto manifests, ReadManifests(f.files));
    for (auto& m : manifests) {
      MKUBE_ASSIGN_OR_RETURN(const std::string ns,
                             NamespaceFor(s, m.object.message.get(), *m.object.info));
      todo.push_back({m.object.info, ns, api::MetaOf(*m.object.message).name()});
    }
  } else {
    const bool selected = f.all || !f.labels.empty() || !f.fields.empty();
    MKUBE_ASSIGN_OR_RETURN(auto targets, ParseTargets(args, !selected));
    if (targets[0].name.empty()) {  // types only ("pods", "deploy,po"): what is selected
      if (!selected)
        return UserError("error: resource(s) were provided, but no name was specified");
      bool any = false;
      for (const auto& t : targets) {
        MKUBE_ASSIGN_OR_RETURN(auto list,
                               s.Worded(s.res().List(*t.kind, s.ns(), f.labels, f.fields)));
        for (const auto& i : list.items) todo.push_back({t.kind, s.ns(), api::MetaOf(*i).name()});
        any = any || !list.items.empty();
      }
      if (!any) NoResources(s, *targets[0].kind, false);
    } else {
      for (const auto& t : targets) todo.push_back({t.kind, s.ns(), t.name});
    }
  }
  return todo;
}

}  // namespace

absl::Status ForEachManifest(const std::vector<std::string>& files,
                             const std::function<absl::Status(Manifest&)>& one) {
  MKUBE_ASSIGN_OR_RETURN(auto manifests, ReadManifests(files));
  int failures = 0;
  for (auto& m : manifests) {
    if (absl::Status st = one(m); !st.ok()) {
      std::cerr << st.message() << "\n";
      ++failures;
    }
  }
  return failures ? Reported() : absl::OkStatus();
}

absl::Status Apply(Session& s, const std::vector<std::string>& files, bool create_only) {
  return ForEachManifest(files, [&](Manifest& m) { return ApplyOne(s, m, create_only); });
}

absl::Status ApplyServerSide(Session& s, const std::vector<std::string>& files,
                             const ServerSideFlags& f) {
  return ForEachManifest(files, [&](Manifest& m) -> absl::Status {
    const api::KindInfo& kind = *m.object.info;
    google::protobuf::Message* obj = m.object.message.get();
    MKUBE_ASSIGN_OR_RETURN(const std::string ns, NamespaceFor(s, obj, kind));
    auto applied = s.res().ServerSideApply(kind, ns, *obj, f.field_manager, f.force_conflicts);
    if (!applied.ok()) {
      absl::Status st = applied.status();
      if (st.code() == absl::StatusCode::kAborted && absl::StartsWith(st.message(), "Apply failed")) {
        st = absl::AbortedError(std::string(st.message()) +
                                "\nPlease review the fields above: they have other managers. Re-run "
                                "with --force-conflicts to take them, or leave them out of the "
                                "configuration (or set them to their current values to share them).");
      }
      return s.Worded(st);
    }
    std::cout << KindName(kind) << "/" << api::MetaOf(*obj).name() << " serverside-applied\n";
    return absl::OkStatus();
  });
}

absl::Status Delete(Session& s, const std::vector<std::string>& args, const DeleteFlags& f) {
  std::optional<int64_t> grace;
  if (f.grace >= 0) grace = f.grace;
  if (f.force) {
    if (!grace) grace = 0;
    if (*grace == 0) {
      std::cerr
          << "Warning: Immediate deletion does not wait for confirmation that the running resource "
             "has been terminated. The resource may continue to run on the cluster indefinitely.\n";
    }
  }
  MKUBE_ASSIGN_OR_RETURN(const auto timeout, DurationFlag(f.timeout, "--timeout"));
  MKUBE_ASSIGN_OR_RETURN(const std::string propagation, PropagationPolicy(f.cascade));
  MKUBE_ASSIGN_OR_RETURN(const std::vector<DeleteTarget> todo, DeleteTargets(s, args, f));
  bool failed = false;
  std::vector<DeleteTarget> deleted;
  for (const auto& d : todo) {
    auto r = s.res().Delete(*d.kind, d.ns, d.name, grace, propagation);
    if (!r.ok()) {
      if (f.ignore_not_found && r.status().code() == absl::StatusCode::kNotFound) continue;
      s.PrintError(r.status());
      failed = true;
      continue;
    }
    std::cout << KindName(*d.kind) << " \"" << d.name << "\" "
              << (f.force && grace == 0 ? "force deleted" : "deleted") << std::endl;
    deleted.push_back(d);
  }
  if (f.wait) {
    for (const auto& d : deleted) {
      if (!WaitGone(s, *d.kind, d.ns, d.name, timeout)) {
        std::cerr << fmt::format("error: timed out waiting for the condition on {}/{}\n",
                                 d.kind->resource, d.name);
        failed = true;
      }
    }
  }
  return failed ? Reported() : absl::OkStatus();
}

}  // namespace mkube::cli
