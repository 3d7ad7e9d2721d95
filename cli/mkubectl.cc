// mkubectl: the kubectl of mkube. Same verbs, flags, columns and messages as kubectl.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "CLI/CLI.hpp"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "api/codec.h"
#include "api/kinds.h"
#include "api/labels.h"
#include "api/object.h"
#include "api/printers.h"
#include "cli/describe.h"
#include "cli/args.h"
#include "cli/kubeconfig.h"
#include "cli/resources.h"
#include "fmt/format.h"
#include "google/protobuf/util/message_differencer.h"
#include "nlohmann/json.hpp"
#include "proto/api/apps.pb.h"
#include "proto/api/core.pb.h"

namespace mkube::cli {
namespace {

using json = nlohmann::ordered_json;

constexpr char kVersion[] = "v0.1.0";
constexpr char kLastApplied[] = "kubectl.kubernetes.io/last-applied-configuration";

// A failure already worded for the user; main prints it and exits 1.
struct Failure {
  std::string line;
};

struct Globals {
  std::string kubeconfig, server, token, ns, request_timeout = "0";
};

class Session {
 public:
  explicit Session(const Globals& g) {
    auto cfg = LoadKubeConfig(KubeConfigPath(g.kubeconfig));
    if (!cfg.ok()) {
      if (g.server.empty()) throw Failure{"error: " + std::string(cfg.status().message())};
      cfg_.server = g.server;
    } else {
      cfg_ = *cfg;
    }
    if (!g.server.empty()) {
      cfg_.server = g.server;
      cfg_.address = g.server;
      cfg_.tls = !g.server.starts_with("http://");
      for (const char* scheme : {"https://", "http://"}) {
        if (cfg_.address.starts_with(scheme)) cfg_.address = cfg_.address.substr(std::strlen(scheme));
      }
    }
    if (!g.token.empty()) cfg_.token = g.token;
    if (!g.ns.empty()) cfg_.namespace_ = g.ns;
    client::ClientOptions o;
    o.address = cfg_.address;
    o.token = cfg_.token;
    if (cfg_.tls) o.ca_pem = cfg_.ca_pem;
    o.timeout = Timeout(g.request_timeout);
    o.read_attempts = 2;
    client_ = std::make_unique<client::ApiClient>(o);
    resources_ = std::make_unique<Resources>(client_.get());
  }

  Resources& res() { return *resources_; }
  const std::string& ns() const { return cfg_.namespace_; }
  const std::string& server() const { return cfg_.server; }
  std::string ServerForErrors() const { return cfg_.address; }

  // The value, or a Failure with kubectl's wording.
  template <typename T>
  T Must(absl::StatusOr<T> r) {
    if (!r.ok()) throw Failure{ErrorLine(r.status(), ServerForErrors())};
    return std::move(*r);
  }

 private:
  static std::chrono::milliseconds Timeout(const std::string& s) {
    // kubectl's --request-timeout: "0" (none), a bare number of seconds, or 1s / 2m / 1h.
    if (s.empty() || s == "0") return std::chrono::hours(24);
    char unit = s.back();
    std::string num = std::isdigit(static_cast<unsigned char>(unit)) ? s : s.substr(0, s.size() - 1);
    int64_t n = 0;
    try {
      n = std::stoll(num);
    } catch (...) {
      throw Failure{fmt::format("error: invalid argument \"{}\" for \"--request-timeout\"", s)};
    }
    int64_t scale = unit == 'm' ? 60000 : unit == 'h' ? 3600000 : 1000;
    if (unit == 's' && s.size() > 2 && s[s.size() - 2] == 'm') {  // "500ms"
      scale = 1;
      n = std::stoll(s.substr(0, s.size() - 2));
    }
    return std::chrono::milliseconds(n * scale);
  }

  KubeConfig cfg_;
  std::unique_ptr<client::ApiClient> client_;
  std::unique_ptr<Resources> resources_;
};

const api::KindInfo& KindOrFail(const std::string& name) {
  const api::KindInfo* k = api::FindResource(name);
  if (!k) throw Failure{fmt::format("error: the server doesn't have a resource type \"{}\"", name)};
  return *k;
}

// "pod/x" or "pods x y": the targets a command names.
struct Target {
  const api::KindInfo* kind;
  std::string name;
};

std::vector<Target> ParseTargets(const std::vector<std::string>& args, bool names_required) {
  std::vector<Target> out;
  if (args.empty()) throw Failure{"error: you must specify the type of resource"};
  if (args[0].find('/') != std::string::npos) {
    for (const auto& a : args) {
      auto slash = a.find('/');
      if (slash == std::string::npos) {
        throw Failure{"error: there is no need to specify a resource type as a separate argument when passing arguments in resource/name form (e.g. 'mkubectl get resource/<resource_name>' instead of 'mkubectl get resource resource/<resource_name>'"};
      }
      out.push_back({&KindOrFail(a.substr(0, slash)), a.substr(slash + 1)});
    }
    return out;
  }
  const api::KindInfo& kind = KindOrFail(args[0]);
  for (size_t i = 1; i < args.size(); ++i) out.push_back({&kind, args[i]});
  if (out.empty()) {
    if (names_required) throw Failure{"error: resource(s) were provided, but no name was specified"};
    out.push_back({&kind, ""});
  }
  return out;
}

// ---- manifests ----

struct Manifest {
  std::string source;  // the file it came from
  api::Object object;
};

std::string ReadAll(std::istream& in) {
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<Manifest> ReadManifests(const std::vector<std::string>& files) {
  if (files.empty()) throw Failure{"error: must specify one of -f and -k"};
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
    if (!in) throw Failure{fmt::format("error: the path \"{}\" does not exist", f)};
    texts.emplace_back(f, ReadAll(in));
  }
  std::vector<Manifest> out;
  for (auto& [source, text] : texts) {
    auto objs = api::DecodeManifests(text);
    if (!objs.ok()) {
      throw Failure{fmt::format("error: error validating \"{}\": {}", source, std::string(objs.status().message()))};
    }
    for (auto& o : *objs) out.push_back(Manifest{source, std::move(o)});
  }
  if (out.empty()) throw Failure{"error: no objects passed to apply"};
  return out;
}

// The namespace an object goes to: its own, else -n / the kubeconfig's; a conflict is an error.
std::string NamespaceFor(Session& s, const Globals& g, google::protobuf::Message* obj,
                         const api::KindInfo& kind) {
  if (!kind.namespaced) return "";
  auto* meta = api::MutableMetaOf(obj);
  if (!meta->namespace_().empty()) {
    if (!g.ns.empty() && g.ns != meta->namespace_()) {
      throw Failure{fmt::format(
          "error: the namespace from the provided object \"{}\" does not match the namespace \"{}\". "
          "You must pass '--namespace={}' to perform this operation.",
          meta->namespace_(), g.ns, meta->namespace_())};
    }
    return meta->namespace_();
  }
  meta->set_namespace_(s.ns());
  return s.ns();
}

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

int Apply(Session& s, const Globals& g, const std::vector<std::string>& files, bool create_only) {
  auto manifests = ReadManifests(files);
  int failures = 0;
  for (auto& m : manifests) {
    const api::KindInfo& kind = *m.object.info;
    google::protobuf::Message* obj = m.object.message.get();
    const std::string ns = NamespaceFor(s, g, obj, kind);
    const std::string name = api::MetaOf(*obj).name();
    const std::string label = KindName(kind) + "/" + name;
    const json applied = ApplyJson(*obj);
    try {
      if (!create_only) {
        auto live = s.res().Get(kind, ns, name);
        if (live.ok()) {
          const auto& ann = api::MetaOf(**live).annotations();
          auto it = ann.find(kLastApplied);
          json last = it == ann.end() ? json() : json::parse(it->second, nullptr, false);
          if (last == applied) {
            std::cout << label << " unchanged\n";
            continue;
          }
          json patch = applied;
          AddDeletions(last, applied, &patch);
          patch["metadata"]["annotations"][kLastApplied] = applied.dump();
          s.Must(s.res().Patch(kind, ns, name, patch.dump()));
          std::cout << label << " configured\n";
          continue;
        }
        if (live.status().code() != absl::StatusCode::kNotFound) s.Must(std::move(live));
        (*api::MutableMetaOf(obj)->mutable_annotations())[kLastApplied] = applied.dump();
      }
      auto created = s.res().Create(kind, ns, *obj);
      if (!created.ok()) {
        absl::Status st = created.status();
        if (st.code() == absl::StatusCode::kAlreadyExists || st.code() == absl::StatusCode::kInvalidArgument ||
            st.code() == absl::StatusCode::kNotFound) {
          st = absl::Status(st.code(), fmt::format("error when creating \"{}\": {}", m.source, std::string(st.message())));
        }
        s.Must(absl::StatusOr<MessagePtr>(st));
      }
      std::cout << label << " created\n";
    } catch (const Failure& f) {
      std::cerr << f.line << "\n";
      ++failures;
    }
  }
  return failures ? 1 : 0;
}

// ---- get ----

struct GetFlags {
  std::string output, labels, fields;
  bool all_namespaces = false, show_labels = false, no_headers = false, watch = false;
};

json ListJson(const std::vector<MessagePtr>& items) {
  json list;
  list["apiVersion"] = "v1";
  list["items"] = json::array();
  for (const auto& i : items) list["items"].push_back(api::EncodeJson(*i));
  list["kind"] = "List";
  list["metadata"]["resourceVersion"] = "";
  return list;
}

void PrintObjects(const api::KindInfo& kind, const std::vector<MessagePtr>& items,
                  const GetFlags& f, bool single, bool prefix_kind, bool headers) {
  if (f.output == "json" || f.output == "yaml") {
    json j = single && items.size() == 1 ? api::EncodeJson(*items[0]) : ListJson(items);
    std::cout << (f.output == "json" ? j.dump(4) + "\n" : api::JsonToYaml(j));
    return;
  }
  if (f.output == "name") {
    for (const auto& i : items) std::cout << KindName(kind) << "/" << api::MetaOf(*i).name() << "\n";
    return;
  }
  api::TableOptions o;
  o.wide = f.output == "wide";
  o.show_labels = f.show_labels;
  o.with_namespace = f.all_namespaces && kind.namespaced;
  std::vector<const google::protobuf::Message*> raw;
  for (const auto& i : items) raw.push_back(i.get());
  api::Table t = api::MakeTable(kind, raw, o);
  if (prefix_kind) {
    const size_t name_col = o.with_namespace ? 1 : 0;
    for (auto& row : t.rows) row[name_col] = KindName(kind) + "/" + row[name_col];
  }
  std::cout << api::RenderTable(t, headers && !f.no_headers);
}

void CheckOutput(const std::string& o) {
  static const std::set<std::string> kOutputs = {"", "wide", "yaml", "json", "name"};
  if (!kOutputs.contains(o)) {
    throw Failure{fmt::format("error: unable to match a printer suitable for the output format \"{}\", "
                              "allowed formats are: json,name,wide,yaml", o)};
  }
}

void NoResources(const Session& s, const GetFlags& f, const api::KindInfo& kind) {
  if (f.all_namespaces || !kind.namespaced) {
    std::cerr << "No resources found\n";
  } else {
    std::cerr << "No resources found in " << s.ns() << " namespace.\n";
  }
}

// Prints rows as objects change, until interrupted.
int WatchRows(Session& s, const api::KindInfo& kind, const GetFlags& f, const std::string& ns,
              const std::string& rv) {
  apiserver::WatchRequest req;
  req.set_resource(kind.resource);
  req.set_namespace_(ns);
  req.set_label_selector(f.labels);
  req.set_field_selector(f.fields);
  req.set_resource_version(rv);
  auto stream = s.res().client()->Watch(req);
  apiserver::WatchEvent ev;
  GetFlags rows = f;
  rows.no_headers = true;
  while (stream->Read(&ev)) {
    if (ev.type() == "BOOKMARK") continue;
    auto obj = s.res().Decode(kind, ev.object());
    if (!obj.ok()) continue;
    PrintObjects(kind, {*obj}, rows, false, false, false);
    std::cout.flush();
  }
  auto st = stream->Finish();
  if (!st.ok() && st.code() != absl::StatusCode::kCancelled) throw Failure{ErrorLine(st, s.ServerForErrors())};
  return 0;
}

int Get(Session& s, const std::vector<std::string>& args, const GetFlags& f) {
  CheckOutput(f.output);
  const std::string ns = f.all_namespaces ? "" : s.ns();
  if (!args.empty() && args[0] == "all") {
    bool any = false;
    for (const char* r : {"pods", "replicationcontrollers", "daemonsets", "deployments", "replicasets", "jobs"}) {
      const api::KindInfo& kind = *api::FindResource(r);
      auto list = s.Must(s.res().List(kind, ns, f.labels, f.fields));
      if (list.items.empty()) continue;
      if (any && f.output != "name") std::cout << "\n";
      PrintObjects(kind, list.items, f, false, true, true);
      any = true;
    }
    if (!any) NoResources(s, f, *api::FindResource("pods"));
    return 0;
  }
  auto targets = ParseTargets(args, false);
  if (targets.size() == 1 && targets[0].name.empty()) {
    const api::KindInfo& kind = *targets[0].kind;
    auto list = s.Must(s.res().List(kind, ns, f.labels, f.fields));
    if (list.items.empty() && !f.watch && (f.output.empty() || f.output == "wide")) {
      NoResources(s, f, kind);
    } else {
      PrintObjects(kind, list.items, f, false, false, true);
    }
    if (f.watch) {
      std::cout.flush();
      return WatchRows(s, kind, f, ns, list.resource_version);
    }
    return 0;
  }
  // Named objects: one table per kind, errors for the missing after the rest.
  std::vector<std::string> errors;
  std::vector<std::pair<const api::KindInfo*, std::vector<MessagePtr>>> found;
  for (const auto& t : targets) {
    auto obj = s.res().Get(*t.kind, ns.empty() ? s.ns() : ns, t.name);
    if (!obj.ok()) {
      errors.push_back(ErrorLine(obj.status(), s.ServerForErrors()));
      continue;
    }
    if (found.empty() || found.back().first != t.kind) found.push_back({t.kind, {}});
    found.back().second.push_back(*obj);
  }
  const bool single = targets.size() == 1;
  for (size_t i = 0; i < found.size(); ++i) {
    if (i > 0 && f.output.empty()) std::cout << "\n";
    PrintObjects(*found[i].first, found[i].second, f, single, found.size() > 1, true);
  }
  for (const auto& e : errors) std::cerr << e << "\n";
  return errors.empty() ? 0 : 1;
}

// ---- delete ----

struct DeleteFlags {
  std::vector<std::string> files;
  std::string labels, fields;
  bool all = false, force = false, wait = true, ignore_not_found = false;
  int64_t grace = -1;
  std::string timeout = "0s";
};

std::chrono::seconds ParseSeconds(const std::string& s, const std::string& flag) {
  auto d = ParseDuration(s, flag);
  if (!d.ok()) throw Failure{"error: " + std::string(d.status().message())};
  return *d;
}

// Waits until the object is gone (or the timeout, 0: a week, as kubectl).
bool WaitGone(Session& s, const api::KindInfo& kind, const std::string& ns, const std::string& name,
              std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + (timeout.count() ? timeout : std::chrono::hours(24 * 7));
  while (std::chrono::steady_clock::now() < deadline) {
    auto obj = s.res().Get(kind, ns, name);
    if (!obj.ok() && obj.status().code() == absl::StatusCode::kNotFound) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

int Delete(Session& s, const Globals& g, const std::vector<std::string>& args, const DeleteFlags& f) {
  std::optional<int64_t> grace;
  if (f.grace >= 0) grace = f.grace;
  if (f.force) {
    if (!grace) grace = 0;
    if (*grace == 0) {
      std::cerr << "Warning: Immediate deletion does not wait for confirmation that the running resource "
                   "has been terminated. The resource may continue to run on the cluster indefinitely.\n";
    }
  }
  const auto timeout = ParseSeconds(f.timeout, "--timeout");
  struct One {
    const api::KindInfo* kind;
    std::string ns, name;
  };
  std::vector<One> todo;
  if (!f.files.empty()) {
    for (auto& m : ReadManifests(f.files)) {
      const std::string ns = NamespaceFor(s, g, m.object.message.get(), *m.object.info);
      todo.push_back({m.object.info, ns, api::MetaOf(*m.object.message).name()});
    }
  } else {
    auto targets = ParseTargets(args, !(f.all || !f.labels.empty() || !f.fields.empty()));
    if (targets.size() == 1 && targets[0].name.empty()) {
      if (!f.all && f.labels.empty() && f.fields.empty()) {
        throw Failure{"error: resource(s) were provided, but no name was specified"};
      }
      auto list = s.Must(s.res().List(*targets[0].kind, s.ns(), f.labels, f.fields));
      if (list.items.empty()) {
        std::cerr << (targets[0].kind->namespaced ? "No resources found in " + s.ns() + " namespace.\n"
                                                  : std::string("No resources found\n"));
      }
      for (const auto& i : list.items) todo.push_back({targets[0].kind, s.ns(), api::MetaOf(*i).name()});
    } else {
      for (const auto& t : targets) todo.push_back({t.kind, s.ns(), t.name});
    }
  }
  int rc = 0;
  std::vector<One> deleted;
  for (const auto& d : todo) {
    auto r = s.res().Delete(*d.kind, d.ns, d.name, grace);
    if (!r.ok()) {
      if (f.ignore_not_found && r.status().code() == absl::StatusCode::kNotFound) continue;
      std::cerr << ErrorLine(r.status(), s.ServerForErrors()) << "\n";
      rc = 1;
      continue;
    }
    std::cout << KindName(*d.kind) << " \"" << d.name << "\" " << (f.force && grace == 0 ? "force deleted" : "deleted") << "\n";
    std::cout.flush();
    deleted.push_back(d);
  }
  if (f.wait) {
    for (const auto& d : deleted) {
      if (!WaitGone(s, *d.kind, d.ns, d.name, timeout)) {
        std::cerr << fmt::format("error: timed out waiting for the condition on {}/{}\n", d.kind->resource, d.name);
        rc = 1;
      }
    }
  }
  return rc;
}

// ---- label / annotate ----

int Relabel(Session& s, const std::vector<std::string>& args, bool overwrite, bool annotations) {
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
          throw Failure{fmt::format("error: invalid label spec: {}: {}", a, std::string(st.message()))};
        }
        if (auto st = api::ValidateLabelValue(value); !st.ok()) {
          throw Failure{fmt::format("error: invalid label value: \"{}\": {}", a, std::string(st.message()))};
        }
      }
      changes[key] = value;
    } else {
      objs.push_back(a);
    }
  }
  if (changes.empty()) {
    throw Failure{fmt::format("error: at least one {} update is required", annotations ? "annotation" : "label")};
  }
  auto targets = ParseTargets(objs, true);
  int rc = 0;
  for (const auto& t : targets) {
    try {
      auto obj = s.Must(s.res().Get(*t.kind, s.ns(), t.name));
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
            throw Failure{fmt::format("error: '{}' already has a value ({}), and --overwrite is false", k, it->second)};
          }
          patch["metadata"][field][k] = *v;
        } else {
          if (it == current.end()) {
            std::cerr << fmt::format("{} \"{}\" not found.\n", annotations ? "annotation" : "label", k);
            continue;
          }
          patch["metadata"][field][k] = nullptr;
        }
      }
      patch["metadata"]["resourceVersion"] = meta.resource_version();
      s.Must(s.res().Patch(*t.kind, s.ns(), t.name, patch.dump()));
      std::cout << KindName(*t.kind) << "/" << t.name << " "
                << (only_removals ? (annotations ? "annotated" : "unlabeled") : verb) << "\n";
    } catch (const Failure& f) {
      std::cerr << f.line << "\n";
      rc = 1;
    }
  }
  return rc;
}

// ---- taint ----

TaintSpec ParseTaintOrFail(const std::string& spec) {
  auto t = ParseTaint(spec);
  if (!t.ok()) throw Failure{"error: " + std::string(t.status().message())};
  return *t;
}

int Taint(Session& s, const std::vector<std::string>& args, bool overwrite) {
  std::vector<std::string> objs;
  std::vector<TaintSpec> specs;
  for (const auto& a : args) {
    if (a.find(':') != std::string::npos || a.find('=') != std::string::npos || (a.size() > 1 && a.back() == '-')) {
      specs.push_back(ParseTaintOrFail(a));
    } else {
      objs.push_back(a);
    }
  }
  if (specs.empty()) throw Failure{"error: at least one taint update is required"};
  auto targets = ParseTargets(objs, true);
  int rc = 0;
  for (const auto& t : targets) {
    if (t.kind->kind != "Node") throw Failure{"error: taints can only be applied to nodes"};
    try {
      auto obj = s.Must(s.res().Get(*t.kind, "", t.name));
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
            throw Failure{fmt::format("error: taint \"{}\" not found", spec.key + (spec.effect.empty() ? "" : ":" + spec.effect))};
          }
          removed = true;
          continue;
        }
        auto it = std::find_if(taints.begin(), taints.end(), [&](const api::Taint& x) {
          return x.key() == spec.key && x.effect() == spec.effect;
        });
        if (it != taints.end() && !overwrite) {
          throw Failure{fmt::format("error: node {} already has {} taint(s) with same effect(s) and --overwrite is false",
                                    t.name, spec.key)};
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
      s.Must(s.res().Patch(*t.kind, "", t.name, patch.dump()));
      std::cout << "node/" << t.name << " " << (added ? (removed ? "modified" : "tainted") : "untainted") << "\n";
    } catch (const Failure& f) {
      std::cerr << f.line << "\n";
      rc = 1;
    }
  }
  return rc;
}

// ---- cordon / uncordon / scale ----

int Cordon(Session& s, const std::vector<std::string>& nodes, bool unschedulable) {
  int rc = 0;
  for (const auto& n : nodes) {
    const api::KindInfo& kind = *api::FindResource("nodes");
    auto obj = s.res().Get(kind, "", n);
    if (!obj.ok()) {
      std::cerr << ErrorLine(obj.status(), s.ServerForErrors()) << "\n";
      rc = 1;
      continue;
    }
    const auto& node = static_cast<const api::Node&>(**obj);
    const char* verb = unschedulable ? "cordoned" : "uncordoned";
    if (node.spec().unschedulable() == unschedulable) {
      std::cout << "node/" << n << " already " << verb << "\n";
      continue;
    }
    json patch;
    patch["spec"]["unschedulable"] = unschedulable ? json(true) : json(nullptr);
    auto r = s.res().Patch(kind, "", n, patch.dump());
    if (!r.ok()) {
      std::cerr << ErrorLine(r.status(), s.ServerForErrors()) << "\n";
      rc = 1;
      continue;
    }
    std::cout << "node/" << n << " " << verb << "\n";
  }
  return rc;
}

int Scale(Session& s, const std::vector<std::string>& args, int replicas) {
  if (replicas < 0) throw Failure{"error: The --replicas=COUNT flag is required, and COUNT must be greater than or equal to 0"};
  int rc = 0;
  for (const auto& t : ParseTargets(args, true)) {
    json patch;
    patch["spec"]["replicas"] = replicas;
    auto r = s.res().Patch(*t.kind, s.ns(), t.name, patch.dump(), "scale");
    if (!r.ok()) {
      std::cerr << ErrorLine(r.status(), s.ServerForErrors()) << "\n";
      rc = 1;
      continue;
    }
    std::cout << KindName(*t.kind) << "/" << t.name << " scaled\n";
  }
  return rc;
}

// ---- describe ----

std::vector<api::Event> EventsFor(Session& s, const api::KindInfo& kind, const google::protobuf::Message& obj) {
  const auto& meta = api::MetaOf(obj);
  const std::string fields = fmt::format("involvedObject.kind={},involvedObject.name={}", kind.kind, meta.name());
  auto list = s.res().List(*api::FindResource("events"), kind.namespaced ? meta.namespace_() : "", "", fields);
  std::vector<api::Event> out;
  if (!list.ok()) return out;
  for (const auto& e : list->items) {
    const auto& ev = static_cast<const api::Event&>(*e);
    if (!ev.involved_object().uid().empty() && ev.involved_object().uid() != meta.uid()) continue;
    out.push_back(ev);
  }
  return out;
}

std::string DescribeOne(Session& s, const api::KindInfo& kind, const MessagePtr& obj) {
  const absl::Time now = absl::Now();
  auto events = EventsFor(s, kind, *obj);
  if (kind.kind == "Pod") return DescribePod(static_cast<const api::Pod&>(*obj), events, now);
  if (kind.kind == "Node") {
    const auto& node = static_cast<const api::Node&>(*obj);
    std::vector<api::Pod> pods;
    auto list = s.Must(s.res().List(*api::FindResource("pods"), "", "", "spec.nodeName=" + node.metadata().name()));
    for (const auto& p : list.items) {
      const auto& pod = static_cast<const api::Pod&>(*p);
      if (pod.status().phase() != "Succeeded" && pod.status().phase() != "Failed") pods.push_back(pod);
    }
    return DescribeNode(node, pods, events, now);
  }
  if (kind.kind == "Deployment") {
    const auto& d = static_cast<const api::Deployment&>(*obj);
    std::vector<api::ReplicaSet> owned;
    auto list = s.Must(s.res().List(*api::FindResource("replicasets"), d.metadata().namespace_(), "", ""));
    for (const auto& r : list.items) {
      const auto& rs = static_cast<const api::ReplicaSet&>(*r);
      for (const auto& o : rs.metadata().owner_references()) {
        if (o.uid() == d.metadata().uid()) owned.push_back(rs);
      }
    }
    std::sort(owned.begin(), owned.end(), [](const auto& a, const auto& b) {
      return a.metadata().creation_timestamp() < b.metadata().creation_timestamp();
    });
    return DescribeDeployment(d, owned, events, now);
  }
  return DescribeGeneric(kind, *obj, events, now);
}

int Describe(Session& s, const std::vector<std::string>& args, const std::string& labels) {
  auto targets = ParseTargets(args, false);
  std::vector<std::pair<const api::KindInfo*, MessagePtr>> objs;
  int rc = 0;
  if (targets.size() == 1 && targets[0].name.empty()) {
    auto list = s.Must(s.res().List(*targets[0].kind, s.ns(), labels, ""));
    for (const auto& i : list.items) objs.push_back({targets[0].kind, i});
    if (objs.empty()) {
      std::cerr << (targets[0].kind->namespaced ? "No resources found in " + s.ns() + " namespace.\n"
                                                : std::string("No resources found\n"));
    }
  } else {
    for (const auto& t : targets) {
      auto obj = s.res().Get(*t.kind, s.ns(), t.name);
      if (!obj.ok()) {
        std::cerr << ErrorLine(obj.status(), s.ServerForErrors()) << "\n";
        rc = 1;
        continue;
      }
      objs.push_back({t.kind, *obj});
    }
  }
  for (size_t i = 0; i < objs.size(); ++i) {
    if (i > 0) std::cout << "\n\n";
    std::cout << DescribeOne(s, *objs[i].first, objs[i].second);
  }
  return rc;
}

// ---- drain ----

struct DrainFlags {
  bool ignore_daemonsets = false, delete_emptydir_data = false, force = false;
  int64_t grace = -1;
  std::string timeout = "0s";
};

int Drain(Session& s, const std::string& node_name, const DrainFlags& f) {
  const auto timeout = ParseSeconds(f.timeout, "--timeout");
  if (int rc = Cordon(s, {node_name}, true); rc != 0) return rc;
  const api::KindInfo& pods_kind = *api::FindResource("pods");
  auto list = s.Must(s.res().List(pods_kind, "", "", "spec.nodeName=" + node_name));
  std::vector<std::string> daemonset, unmanaged, local_storage;
  std::vector<const api::Pod*> evict;
  for (const auto& p : list.items) {
    const auto& pod = static_cast<const api::Pod&>(*p);
    const std::string id = pod.metadata().namespace_() + "/" + pod.metadata().name();
    if (pod.status().phase() == "Succeeded" || pod.status().phase() == "Failed") {
      evict.push_back(&pod);  // finished: deleted without a fuss
      continue;
    }
    const api::OwnerReference* controller = nullptr;
    for (const auto& o : pod.metadata().owner_references()) {
      if (o.controller()) controller = &o;
    }
    if (controller && controller->kind() == "DaemonSet") {
      daemonset.push_back(id);
      continue;
    }
    if (!controller) unmanaged.push_back(id);
    bool empty_dir = false;
    for (const auto& v : pod.spec().volumes()) empty_dir |= v.has_empty_dir();
    if (empty_dir) local_storage.push_back(id);
    evict.push_back(&pod);
  }
  std::vector<std::string> errors;
  if (!daemonset.empty() && !f.ignore_daemonsets) {
    errors.push_back("cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): " + absl::StrJoin(daemonset, ", "));
  }
  if (!unmanaged.empty() && !f.force) {
    errors.push_back("cannot delete Pods declare no controller (use --force to override): " + absl::StrJoin(unmanaged, ", "));
  }
  if (!local_storage.empty() && !f.delete_emptydir_data) {
    errors.push_back("cannot delete Pods with local storage (use --delete-emptydir-data to override): " + absl::StrJoin(local_storage, ", "));
  }
  if (!errors.empty()) {
    std::cerr << fmt::format("error: unable to drain node \"{}\" due to error:{}, continuing command...\n", node_name,
                             absl::StrJoin(errors, ", "));
    std::cerr << "There are pending nodes to be drained:\n " << node_name << "\n";
    for (const auto& e : errors) std::cerr << e << "\n";
    return 1;
  }
  if (!daemonset.empty()) std::cerr << "Warning: ignoring DaemonSet-managed Pods: " << absl::StrJoin(daemonset, ", ") << "\n";
  if (!unmanaged.empty()) std::cerr << "Warning: deleting Pods that declare no controller: " << absl::StrJoin(unmanaged, ", ") << "\n";
  for (const auto* pod : evict) {
    std::cout << "evicting pod " << pod->metadata().namespace_() << "/" << pod->metadata().name() << "\n";
    std::cout.flush();
    api::Eviction ev;
    ev.mutable_metadata()->set_name(pod->metadata().name());
    ev.mutable_metadata()->set_namespace_(pod->metadata().namespace_());
    if (f.grace >= 0) ev.mutable_delete_options()->set_grace_period_seconds(f.grace);
    apiserver::CreateRequest req;
    req.set_resource("pods");
    req.set_namespace_(pod->metadata().namespace_());
    req.set_name(pod->metadata().name());
    req.set_subresource("eviction");
    req.set_object(ev.SerializeAsString());
    auto r = s.res().client()->CreateRaw(req);
    if (!r.ok() && r.status().code() != absl::StatusCode::kNotFound) {
      std::cerr << "error when evicting pods/\"" << pod->metadata().name() << "\" -n \"" << pod->metadata().namespace_()
                << "\": " << r.status().message() << "\n";
      return 1;
    }
  }
  for (const auto* pod : evict) {
    if (!WaitGone(s, pods_kind, pod->metadata().namespace_(), pod->metadata().name(), timeout)) {
      std::cerr << fmt::format("error: unable to drain node \"{}\" due to error: global timeout reached: {}, continuing command...\n",
                               node_name, f.timeout);
      return 1;
    }
    std::cout << "pod/" << pod->metadata().name() << " evicted\n";
    std::cout.flush();
  }
  std::cout << "node/" << node_name << " drained\n";
  return 0;
}

// ---- rollout / set image ----

// kubectl's rollout status of a deployment: the message, and whether it is done.
std::pair<std::string, bool> RolloutMessage(const api::Deployment& d) {
  const std::string& name = d.metadata().name();
  const auto& st = d.status();
  if (d.metadata().generation() > st.observed_generation()) return {"Waiting for deployment spec update to be observed...", false};
  for (const auto& c : st.conditions()) {
    if (c.type() == "Progressing" && c.reason() == "ProgressDeadlineExceeded") {
      throw Failure{fmt::format("error: deployment \"{}\" exceeded its progress deadline", name)};
    }
  }
  const int32_t desired = d.spec().has_replicas() ? d.spec().replicas() : 1;
  if (st.updated_replicas() < desired) {
    return {fmt::format("Waiting for deployment \"{}\" rollout to finish: {} out of {} new replicas have been updated...",
                        name, st.updated_replicas(), desired), false};
  }
  if (st.replicas() > st.updated_replicas()) {
    return {fmt::format("Waiting for deployment \"{}\" rollout to finish: {} old replicas are pending termination...",
                        name, st.replicas() - st.updated_replicas()), false};
  }
  if (st.available_replicas() < st.updated_replicas()) {
    return {fmt::format("Waiting for deployment \"{}\" rollout to finish: {} of {} updated replicas are available...",
                        name, st.available_replicas(), st.updated_replicas()), false};
  }
  return {fmt::format("deployment \"{}\" successfully rolled out", name), true};
}

int RolloutStatus(Session& s, const std::vector<std::string>& args, const std::string& timeout_flag) {
  auto targets = ParseTargets(args, true);
  const auto timeout = ParseSeconds(timeout_flag, "--timeout");
  for (const auto& t : targets) {
    if (t.kind->kind != "Deployment") throw Failure{fmt::format("error: no status viewer has been implemented for {}", t.kind->kind)};
    const auto deadline = std::chrono::steady_clock::now() + (timeout.count() ? timeout : std::chrono::hours(24 * 7));
    std::string last;
    for (;;) {
      auto obj = s.Must(s.res().Get(*t.kind, s.ns(), t.name));
      auto [msg, done] = RolloutMessage(static_cast<const api::Deployment&>(*obj));
      if (msg != last) {
        std::cout << msg << "\n";
        std::cout.flush();
        last = msg;
      }
      if (done) break;
      if (std::chrono::steady_clock::now() >= deadline) throw Failure{"error: timed out waiting for the condition"};
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
  }
  return 0;
}

constexpr char kRevision[] = "deployment.kubernetes.io/revision";

// A deployment's ReplicaSets by revision (the deployment controller numbers them).
std::map<int64_t, api::ReplicaSet> History(Session& s, const api::Deployment& d) {
  std::map<int64_t, api::ReplicaSet> out;
  auto list = s.Must(s.res().List(*api::FindResource("replicasets"), d.metadata().namespace_(), "", ""));
  for (const auto& r : list.items) {
    const auto& rs = static_cast<const api::ReplicaSet&>(*r);
    bool owned = false;
    for (const auto& o : rs.metadata().owner_references()) owned |= o.controller() && o.uid() == d.metadata().uid();
    auto it = rs.metadata().annotations().find(kRevision);
    if (!owned || it == rs.metadata().annotations().end()) continue;
    try {
      out[std::stoll(it->second)] = rs;
    } catch (...) {
    }
  }
  return out;
}

const api::Deployment& DeploymentOf(const Target& t, const MessagePtr& obj) {
  if (t.kind->kind != "Deployment") {
    throw Failure{fmt::format("error: no history viewer has been implemented for {}", t.kind->kind)};
  }
  return static_cast<const api::Deployment&>(*obj);
}

int RolloutHistory(Session& s, const std::vector<std::string>& args) {
  for (const auto& t : ParseTargets(args, true)) {
    auto obj = s.Must(s.res().Get(*t.kind, s.ns(), t.name));
    const auto history = History(s, DeploymentOf(t, obj));
    std::cout << KindName(*t.kind) << "/" << t.name << " \n";
    api::Table table;
    table.columns = {"REVISION", "CHANGE-CAUSE"};
    for (const auto& [rev, rs] : history) {
      auto cause = rs.metadata().annotations().find("kubernetes.io/change-cause");
      table.rows.push_back({std::to_string(rev), cause == rs.metadata().annotations().end() ? "<none>" : cause->second});
    }
    std::cout << api::RenderTable(table) << "\n";
  }
  return 0;
}

int RolloutUndo(Session& s, const std::vector<std::string>& args, int64_t to_revision) {
  for (const auto& t : ParseTargets(args, true)) {
    auto obj = s.Must(s.res().Get(*t.kind, s.ns(), t.name));
    const auto& d = DeploymentOf(t, obj);
    const auto history = History(s, d);
    int64_t current = 0;
    if (auto it = d.metadata().annotations().find(kRevision); it != d.metadata().annotations().end()) {
      current = std::atoll(it->second.c_str());
    }
    const api::ReplicaSet* target = nullptr;
    if (to_revision > 0) {
      auto it = history.find(to_revision);
      if (it == history.end()) throw Failure{fmt::format("error: unable to find specified revision {} in history", to_revision)};
      target = &it->second;
    } else {
      // The newest revision before the current one (the newest there is, without a current).
      if (current == 0 && !history.empty()) current = history.rbegin()->first;
      for (const auto& [rev, rs] : history) {
        if (rev < current) target = &rs;
      }
      if (!target) throw Failure{fmt::format("error: no rollout history found for deployment \"{}\"", t.name)};
    }
    // The ReplicaSet's template without the label the controller adds to tell revisions apart.
    api::PodTemplateSpec tmpl = target->spec().template_();
    tmpl.mutable_metadata()->mutable_labels()->erase("pod-template-hash");
    if (google::protobuf::util::MessageDifferencer::Equals(tmpl, d.spec().template_())) {
      std::cout << KindName(*t.kind) << "/" << t.name << " skipped rollback (current template already matches revision "
                << target->metadata().annotations().at(kRevision) << ")\n";
      continue;
    }
    json patch;
    patch["metadata"]["resourceVersion"] = d.metadata().resource_version();
    patch["spec"]["template"] = api::EncodeJson(tmpl);
    s.Must(s.res().Patch(*t.kind, s.ns(), t.name, patch.dump()));
    std::cout << KindName(*t.kind) << "/" << t.name << " rolled back\n";
  }
  return 0;
}

int SetImage(Session& s, const std::vector<std::string>& args) {
  std::vector<std::string> objs;
  std::map<std::string, std::string> images;
  for (const auto& a : args) {
    if (auto eq = a.find('='); eq != std::string::npos) {
      images[a.substr(0, eq)] = a.substr(eq + 1);
    } else {
      objs.push_back(a);
    }
  }
  if (images.empty()) throw Failure{"error: at least one image update is required"};
  int rc = 0;
  for (const auto& t : ParseTargets(objs, true)) {
    auto obj = s.Must(s.res().Get(*t.kind, s.ns(), t.name));
    google::protobuf::Message* tmpl = nullptr;
    if (t.kind->kind == "Deployment") tmpl = static_cast<api::Deployment&>(*obj).mutable_spec()->mutable_template_();
    if (t.kind->kind == "ReplicaSet") tmpl = static_cast<api::ReplicaSet&>(*obj).mutable_spec()->mutable_template_();
    if (t.kind->kind == "DaemonSet") tmpl = static_cast<api::DaemonSet&>(*obj).mutable_spec()->mutable_template_();
    if (t.kind->kind == "Job") tmpl = static_cast<api::Job&>(*obj).mutable_spec()->mutable_template_();
    if (t.kind->kind == "Pod") tmpl = nullptr;
    api::PodSpec* spec = t.kind->kind == "Pod" ? static_cast<api::Pod&>(*obj).mutable_spec()
                         : tmpl ? static_cast<api::PodTemplateSpec*>(tmpl)->mutable_spec() : nullptr;
    if (!spec) throw Failure{fmt::format("error: {} has no pod template", KindName(*t.kind))};
    for (const auto& [container, image] : images) {
      bool found = false;
      for (auto& c : *spec->mutable_containers()) {
        if (container == "*" || c.name() == container) {
          c.set_image(image);
          found = true;
        }
      }
      if (!found) throw Failure{fmt::format("error: unable to find container named \"{}\"", container)};
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
    auto r = s.res().Patch(*t.kind, s.ns(), t.name, patch.dump());
    if (!r.ok()) {
      std::cerr << ErrorLine(r.status(), s.ServerForErrors()) << "\n";
      rc = 1;
      continue;
    }
    std::cout << KindName(*t.kind) << "/" << t.name << " image updated\n";
  }
  return rc;
}

// ---- explain / completion ----

std::string TypeName(const google::protobuf::FieldDescriptor* f) {
  using FD = google::protobuf::FieldDescriptor;
  std::string t;
  if (f->is_map()) {
    return "<map[string]" + TypeName(f->message_type()->map_value()).substr(1);
  }
  switch (f->cpp_type()) {
    case FD::CPPTYPE_STRING: t = "string"; break;
    case FD::CPPTYPE_BOOL: t = "boolean"; break;
    case FD::CPPTYPE_MESSAGE: t = f->message_type()->name() == "IntOrString" ? "string" : "Object"; break;
    case FD::CPPTYPE_DOUBLE:
    case FD::CPPTYPE_FLOAT: t = "number"; break;
    default: t = "integer";
  }
  return std::string("<") + (f->is_repeated() ? "[]" : "") + t + ">";
}

int Explain(const std::string& path) {
  std::vector<std::string> parts = absl::StrSplit(path, '.');
  const api::KindInfo& kind = KindOrFail(parts[0]);
  const google::protobuf::Descriptor* d = kind.prototype->GetDescriptor();
  const google::protobuf::FieldDescriptor* field = nullptr;
  for (size_t i = 1; i < parts.size(); ++i) {
    if (!d) throw Failure{fmt::format("error: field \"{}\" does not exist", parts[i])};
    field = nullptr;
    for (int j = 0; j < d->field_count(); ++j) {
      if (d->field(j)->json_name() == parts[i]) field = d->field(j);
    }
    if (!field) throw Failure{fmt::format("error: field \"{}\" does not exist", parts[i])};
    d = field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE && !field->is_map() &&
                field->message_type()->name() != "IntOrString"
            ? field->message_type()
            : nullptr;
  }
  std::cout << "KIND:     " << kind.kind << "\nVERSION:  " << kind.api_version() << "\n\n";
  if (field && !d) {
    std::cout << "FIELD:    " << field->json_name() << " " << TypeName(field) << "\n";
    return 0;
  }
  if (field) std::cout << "RESOURCE: " << field->json_name() << " " << TypeName(field) << "\n\n";
  std::cout << "FIELDS:\n";
  std::map<std::string, std::string> fields;
  for (int j = 0; j < d->field_count(); ++j) fields[d->field(j)->json_name()] = TypeName(d->field(j));
  for (const auto& [name, type] : fields) std::cout << "   " << name << "\t" << type << "\n";
  return 0;
}

int Completion(const std::string& shell) {
  if (shell != "bash") throw Failure{fmt::format("error: Unsupported shell type \"{}\".", shell)};
  std::set<std::string> types;
  for (const auto& k : api::Kinds()) {
    types.insert(k.resource);
    types.insert(k.singular);
    for (const auto& s : k.short_names) types.insert(s);
  }
  std::cout << R"SH(# bash completion for mkubectl:  source <(mkubectl completion bash)
_mkubectl() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
  local commands="annotate api-resources apply cluster-info completion cordon create delete describe drain explain get label rollout scale set taint uncordon version"
  local types=")SH" << absl::StrJoin(types, " ") << R"SH("
  case "$prev" in
    -o|--output) COMPREPLY=($(compgen -W "json yaml name wide" -- "$cur")); return ;;
    -n|--namespace) COMPREPLY=($(compgen -W "$(mkubectl get namespaces -o name 2>/dev/null | sed 's|.*/||')" -- "$cur")); return ;;
    -f|--filename|--kubeconfig) COMPREPLY=($(compgen -f -- "$cur")); return ;;
  esac
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "$commands" -- "$cur")); return
  fi
  local cmd=${COMP_WORDS[1]} i type="" words=0
  for ((i = 2; i < COMP_CWORD; i++)); do
    case "${COMP_WORDS[i]}" in -*) ;; *) [ -z "$type" ] && type=${COMP_WORDS[i]}; words=$((words + 1)) ;; esac
  done
  case "$cmd" in
    cordon|uncordon|drain) COMPREPLY=($(compgen -W "$(mkubectl get nodes -o name 2>/dev/null | sed 's|.*/||')" -- "$cur")) ;;
    rollout) [ "$words" -eq 0 ] && COMPREPLY=($(compgen -W "status" -- "$cur")) ;;
    set) [ "$words" -eq 0 ] && COMPREPLY=($(compgen -W "image" -- "$cur")) ;;
    completion) COMPREPLY=($(compgen -W "bash" -- "$cur")) ;;
    get|describe|delete|label|annotate|scale|explain|taint)
      if [ "$words" -eq 0 ]; then
        COMPREPLY=($(compgen -W "$types" -- "$cur"))
        [ "$cmd" = get ] && COMPREPLY+=($(compgen -W "all" -- "$cur"))
      else
        COMPREPLY=($(compgen -W "$(mkubectl get "$type" -o name 2>/dev/null | sed 's|.*/||')" -- "$cur"))
      fi ;;
  esac
}
complete -F _mkubectl mkubectl
)SH";
  return 0;
}

int ApiResources() {
  api::Table t;
  t.columns = {"NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"};
  std::vector<const api::KindInfo*> kinds;
  for (const auto& k : api::Kinds()) kinds.push_back(&k);
  std::sort(kinds.begin(), kinds.end(), [](auto* a, auto* b) { return a->resource < b->resource; });
  for (const auto* k : kinds) {
    t.rows.push_back({k->resource, absl::StrJoin(k->short_names, ","), k->api_version(),
                      k->namespaced ? "true" : "false", k->kind});
  }
  std::cout << api::RenderTable(t);
  return 0;
}

int Run(int argc, char** argv) {
  CLI::App app{"mkubectl controls the mkube cluster manager."};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Help for every command");
  Globals g;
  app.add_option("--kubeconfig", g.kubeconfig, "Path to the kubeconfig file (default $MKUBECONFIG, then ~/.mkube/config)");
  app.add_option("-s,--server", g.server, "The address of the mkube API server");
  app.add_option("--token", g.token, "Bearer token for authentication to the API server");
  app.add_option("-n,--namespace", g.ns, "If present, the namespace scope for this request");
  app.add_option("--request-timeout", g.request_timeout,
                 "How long to wait for a single server request (0: no timeout); e.g. 1s, 2m, 3h");
  std::function<int()> action;

  // apply / create
  std::vector<std::string> files;
  auto* apply = app.add_subcommand("apply", "Apply a configuration to a resource by file name or stdin");
  apply->add_option("-f,--filename", files, "Files, directories or - (stdin) with the configuration")->required();
  apply->callback([&] { action = [&] { Session s(g); return Apply(s, g, files, false); }; });
  auto* create = app.add_subcommand("create", "Create a resource from a file or from stdin");
  create->add_option("-f,--filename", files, "Files, directories or - (stdin) with the resources")->required();
  create->callback([&] { action = [&] { Session s(g); return Apply(s, g, files, true); }; });

  // get
  GetFlags gf;
  std::vector<std::string> args;
  auto* get = app.add_subcommand("get", "Display one or many resources");
  get->add_option("args", args, "TYPE[.GROUP] [NAME...] | TYPE/NAME... | all");
  get->add_option("-o,--output", gf.output, "Output format: json|yaml|name|wide");
  get->add_option("-l,--selector", gf.labels, "Label selector (=, ==, !=, in, notin, exists)");
  get->add_option("--field-selector", gf.fields, "Field selector (=, ==, !=)");
  get->add_flag("-A,--all-namespaces", gf.all_namespaces, "List across all namespaces");
  get->add_flag("--show-labels", gf.show_labels, "Show all labels as the last column");
  get->add_flag("--no-headers", gf.no_headers, "Don't print headers");
  get->add_flag("-w,--watch", gf.watch, "After listing, watch for changes");
  get->callback([&] {
    action = [&] {
      if (args.empty()) {
        throw Failure{"You must specify the type of resource to get. Use \"mkubectl api-resources\" for a complete list of supported resources."};
      }
      Session s(g);
      return Get(s, args, gf);
    };
  });

  // delete
  DeleteFlags df;
  auto* del = app.add_subcommand("delete", "Delete resources by file names, stdin, resources and names, or by selector");
  del->add_option("args", args, "TYPE NAME... | TYPE/NAME...");
  del->add_option("-f,--filename", df.files, "Files with the resources to delete");
  del->add_option("-l,--selector", df.labels, "Label selector");
  del->add_option("--field-selector", df.fields, "Field selector");
  del->add_flag("--all", df.all, "Delete every resource of the type in the namespace");
  del->add_flag("--force", df.force, "Delete at once, without waiting for the pods to stop");
  del->add_option("--grace-period", df.grace, "Seconds given to the resource to terminate gracefully (-1: its default)");
  del->add_option("--wait", df.wait, "Wait for the resources to be gone before returning")->capture_default_str();
  del->add_option("--timeout", df.timeout, "How long to wait before giving up (0: a week)");
  del->add_flag("--ignore-not-found", df.ignore_not_found, "Treat \"resource not found\" as a successful delete");
  del->callback([&] { action = [&] { Session s(g); return Delete(s, g, args, df); }; });

  // label / annotate / taint
  bool overwrite = false;
  auto* label = app.add_subcommand("label", "Update the labels on a resource");
  label->add_option("args", args, "TYPE NAME KEY_1=VAL_1 ... KEY_N- ")->required();
  label->add_flag("--overwrite", overwrite, "Allow labels to be overwritten");
  label->callback([&] { action = [&] { Session s(g); return Relabel(s, args, overwrite, false); }; });
  auto* annotate = app.add_subcommand("annotate", "Update the annotations on a resource");
  annotate->add_option("args", args, "TYPE NAME KEY_1=VAL_1 ... KEY_N-")->required();
  annotate->add_flag("--overwrite", overwrite, "Allow annotations to be overwritten");
  annotate->callback([&] { action = [&] { Session s(g); return Relabel(s, args, overwrite, true); }; });
  auto* taint = app.add_subcommand("taint", "Update the taints on one or more nodes");
  taint->add_option("args", args, "nodes NODE KEY_1=VAL_1:TAINT_EFFECT_1 ... KEY_N-")->required();
  taint->add_flag("--overwrite", overwrite, "Allow taints to be overwritten");
  taint->callback([&] { action = [&] { Session s(g); return Taint(s, args, overwrite); }; });

  // cordon / uncordon / scale
  auto* cordon = app.add_subcommand("cordon", "Mark node as unschedulable");
  cordon->add_option("nodes", args, "NODE...")->required();
  cordon->callback([&] { action = [&] { Session s(g); return Cordon(s, args, true); }; });
  auto* uncordon = app.add_subcommand("uncordon", "Mark node as schedulable");
  uncordon->add_option("nodes", args, "NODE...")->required();
  uncordon->callback([&] { action = [&] { Session s(g); return Cordon(s, args, false); }; });
  int replicas = -1;
  auto* scale = app.add_subcommand("scale", "Set a new size for a deployment or replica set");
  scale->add_option("args", args, "TYPE NAME | TYPE/NAME")->required();
  scale->add_option("--replicas", replicas, "The new desired number of replicas")->required();
  scale->callback([&] { action = [&] { Session s(g); return Scale(s, args, replicas); }; });

  // describe / drain / rollout / set image
  std::string describe_labels;
  auto* describe = app.add_subcommand("describe", "Show details of a specific resource or group of resources");
  describe->add_option("args", args, "TYPE [NAME...] | TYPE/NAME...")->required();
  describe->add_option("-l,--selector", describe_labels, "Label selector");
  describe->callback([&] { action = [&] { Session s(g); return Describe(s, args, describe_labels); }; });
  DrainFlags drain_flags;
  std::string drain_node;
  auto* drain = app.add_subcommand("drain", "Drain node in preparation for maintenance");
  drain->add_option("node", drain_node, "NODE")->required();
  drain->add_flag("--ignore-daemonsets", drain_flags.ignore_daemonsets, "Ignore DaemonSet-managed pods");
  drain->add_flag("--delete-emptydir-data,--delete-local-data", drain_flags.delete_emptydir_data,
                  "Continue even if there are pods using emptyDir (local data that will be deleted)");
  drain->add_flag("--force", drain_flags.force, "Continue even if there are pods that do not declare a controller");
  drain->add_option("--grace-period", drain_flags.grace, "Seconds given to each pod to terminate gracefully (-1: its own)");
  drain->add_option("--timeout", drain_flags.timeout, "How long to wait before giving up (0: infinite)");
  drain->callback([&] { action = [&] { Session s(g); return Drain(s, drain_node, drain_flags); }; });
  auto* rollout = app.add_subcommand("rollout", "Manage the rollout of a resource");
  rollout->require_subcommand(1);
  std::string rollout_timeout = "0s";
  auto* rollout_status = rollout->add_subcommand("status", "Show the status of the rollout");
  rollout_status->add_option("args", args, "TYPE NAME | TYPE/NAME")->required();
  rollout_status->add_option("--timeout", rollout_timeout, "How long to wait (0: forever)");
  rollout_status->callback([&] { action = [&] { Session s(g); return RolloutStatus(s, args, rollout_timeout); }; });
  auto* rollout_history = rollout->add_subcommand("history", "View the rollout history");
  rollout_history->add_option("args", args, "TYPE NAME | TYPE/NAME")->required();
  rollout_history->callback([&] { action = [&] { Session s(g); return RolloutHistory(s, args); }; });
  int64_t to_revision = 0;
  auto* rollout_undo = rollout->add_subcommand("undo", "Undo a previous rollout");
  rollout_undo->add_option("args", args, "TYPE NAME | TYPE/NAME")->required();
  rollout_undo->add_option("--to-revision", to_revision, "The revision to roll back to (0: the previous one)");
  rollout_undo->callback([&] { action = [&] { Session s(g); return RolloutUndo(s, args, to_revision); }; });
  auto* set = app.add_subcommand("set", "Set specific features on objects");
  set->require_subcommand(1);
  auto* set_image = set->add_subcommand("image", "Update the image of a pod template");
  set_image->add_option("args", args, "TYPE NAME CONTAINER=IMAGE... | TYPE/NAME CONTAINER=IMAGE...")->required();
  set_image->callback([&] { action = [&] { Session s(g); return SetImage(s, args); }; });

  // information
  auto* version = app.add_subcommand("version", "Print the client and server version information");
  bool client_only = false;
  version->add_flag("--client", client_only, "Only the client version");
  version->callback([&] {
    action = [&] {
      std::cout << "Client Version: " << kVersion << "\n";
      if (client_only) return 0;
      Session s(g);
      s.Must(s.res().List(*api::FindResource("namespaces"), "", "", ""));
      std::cout << "Server Version: " << kVersion << "\n";
      return 0;
    };
  });
  auto* info = app.add_subcommand("cluster-info", "Display cluster information");
  info->callback([&] {
    action = [&] {
      Session s(g);
      s.Must(s.res().List(*api::FindResource("namespaces"), "", "", ""));
      const bool tty = isatty(STDOUT_FILENO);
      std::cout << (tty ? "\033[0;32mKubernetes control plane\033[0m is running at \033[0;33m" : "Kubernetes control plane is running at ")
                << s.server() << (tty ? "\033[0m" : "") << "\n\n"
                << "To further debug and diagnose cluster problems, use 'mkubectl cluster-info dump'.\n";
      return 0;
    };
  });
  std::string explain_path;
  auto* explain = app.add_subcommand("explain", "Get the fields of a resource, or of a field: TYPE[.FIELD...]");
  explain->add_option("path", explain_path, "e.g. pod.spec.affinity.nodeAffinity")->required();
  explain->callback([&] { action = [&] { return Explain(explain_path); }; });
  std::string shell;
  auto* completion = app.add_subcommand("completion", "Output shell completion code for bash: source <(mkubectl completion bash)");
  completion->add_option("shell", shell, "bash")->required();
  completion->callback([&] { action = [&] { return Completion(shell); }; });
  auto* resources = app.add_subcommand("api-resources", "Print the supported API resources on the server");
  resources->callback([&] { action = [] { return ApiResources(); }; });

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    return app.exit(CLI::CallForHelp());
  } catch (const CLI::CallForAllHelp&) {
    return app.exit(CLI::CallForAllHelp());
  } catch (const CLI::ParseError& e) {
    std::cerr << "error: " << e.what() << "\nSee 'mkubectl --help' for usage.\n";
    return 1;
  }
  return action ? action() : 0;
}

}  // namespace
}  // namespace mkube::cli

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  try {
    return mkube::cli::Run(argc, argv);
  } catch (const mkube::cli::Failure& f) {
    std::cout.flush();
    std::cerr << f.line << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
