// get and describe.
#include <algorithm>
#include <iostream>
#include <set>

#include "api/codec.h"
#include "api/object.h"
#include "api/printers.h"
#include "cli/commands.h"
#include "cli/describe.h"
#include "fmt/format.h"
#include "proto/api/apps.pb.h"
#include "proto/api/core.pb.h"

namespace mkube::cli {
namespace {

json ListJson(const std::vector<MessagePtr>& items) {
  json list;
  list["apiVersion"] = "v1";
  list["items"] = json::array();
  for (const auto& i : items) list["items"].push_back(api::EncodeJson(*i));
  list["kind"] = "List";
  list["metadata"]["resourceVersion"] = "";
  return list;
}

// As -o asks: a table (kind-prefixed names when several kinds are shown), yaml, json or names.
// `widths` (optional) carries the table's column widths from one call to the next.
void PrintObjects(const api::KindInfo& kind, const std::vector<MessagePtr>& items,
                  const GetFlags& f, bool single, bool prefix_kind, bool headers,
                  std::vector<size_t>* widths = nullptr) {
  if (f.output == "json" || f.output == "yaml") {
    json j = single && items.size() == 1 ? api::EncodeJson(*items[0]) : ListJson(items);
    std::cout << (f.output == "json" ? j.dump(4) + "\n" : api::JsonToYaml(j));
    return;
  }
  if (f.output == "name") {
    for (const auto& i : items)
      std::cout << KindName(kind) << "/" << api::MetaOf(*i).name() << "\n";
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
  std::cout << api::RenderTable(t, headers && !f.no_headers, widths);
}

absl::Status CheckOutput(const std::string& o) {
  static const std::set<std::string> kOutputs = {"", "wide", "yaml", "json", "name"};
  if (kOutputs.contains(o)) return absl::OkStatus();
  return UserError(
      fmt::format("error: unable to match a printer suitable for the output format \"{}\", allowed "
                  "formats are: "
                  "json,name,wide,yaml",
                  o));
}

// Prints rows as objects change, until interrupted.
absl::Status WatchRows(Session& s, const api::KindInfo& kind, const GetFlags& f,
                       const std::string& ns, const std::string& rv, std::vector<size_t>* widths) {
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
    PrintObjects(kind, {*obj}, rows, false, false, false, widths);
    std::cout.flush();
  }
  auto st = stream->Finish();
  if (!st.ok() && st.code() != absl::StatusCode::kCancelled) return s.Worded(st);
  return absl::OkStatus();
}

std::vector<api::Event> EventsFor(Session& s, const api::KindInfo& kind,
                                  const google::protobuf::Message& obj) {
  const auto& meta = api::MetaOf(obj);
  const std::string fields =
      fmt::format("involvedObject.kind={},involvedObject.name={}", kind.kind, meta.name());
  auto list = s.res().List(*api::FindResource("events"), kind.namespaced ? meta.namespace_() : "",
                           "", fields);
  std::vector<api::Event> out;
  if (!list.ok()) return out;
  for (const auto& e : list->items) {
    const auto& ev = static_cast<const api::Event&>(*e);
    if (!ev.involved_object().uid().empty() && ev.involved_object().uid() != meta.uid()) continue;
    out.push_back(ev);
  }
  return out;
}

absl::StatusOr<std::string> DescribeOne(Session& s, const api::KindInfo& kind,
                                        const MessagePtr& obj) {
  const absl::Time now = absl::Now();
  auto events = EventsFor(s, kind, *obj);
  if (kind.kind == "Pod") return DescribePod(static_cast<const api::Pod&>(*obj), events, now);
  if (kind.kind == "Node") {
    const auto& node = static_cast<const api::Node&>(*obj);
    std::vector<api::Pod> pods;
    MKUBE_ASSIGN_OR_RETURN(auto list,
                           s.Worded(s.res().List(*api::FindResource("pods"), "", "",
                                                 "spec.nodeName=" + node.metadata().name())));
    for (const auto& p : list.items) {
      const auto& pod = static_cast<const api::Pod&>(*p);
      if (pod.status().phase() != "Succeeded" && pod.status().phase() != "Failed")
        pods.push_back(pod);
    }
    // The agent's heartbeat lease, kept in kube-node-lease under the node's name.
    auto lease =
        s.res().Get(*api::FindResource("leases"), "kube-node-lease", node.metadata().name());
    const api::Lease* held = lease.ok() ? static_cast<const api::Lease*>(lease->get()) : nullptr;
    return DescribeNode(node, held, pods, events, now);
  }
  if (kind.kind == "Deployment") {
    const auto& d = static_cast<const api::Deployment&>(*obj);
    std::vector<api::ReplicaSet> owned;
    MKUBE_ASSIGN_OR_RETURN(auto list, s.Worded(s.res().List(*api::FindResource("replicasets"),
                                                            d.metadata().namespace_(), "", "")));
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

}  // namespace

absl::Status Get(Session& s, const std::vector<std::string>& args, const GetFlags& f) {
  MKUBE_RETURN_IF_ERROR(CheckOutput(f.output));
  const std::string ns = f.all_namespaces ? "" : s.ns();
  if (!args.empty() && args[0] == "all") {
    bool any = false;
    for (const char* r :
         {"pods", "replicationcontrollers", "daemonsets", "deployments", "replicasets", "jobs",
          "cronjobs"}) {
      const api::KindInfo& kind = *api::FindResource(r);
      MKUBE_ASSIGN_OR_RETURN(auto list, s.Worded(s.res().List(kind, ns, f.labels, f.fields)));
      if (list.items.empty()) continue;
      if (any && f.output != "name") std::cout << "\n";
      PrintObjects(kind, list.items, f, false, true, true);
      any = true;
    }
    if (!any) NoResources(s, *api::FindResource("pods"), f.all_namespaces);
    return absl::OkStatus();
  }
  MKUBE_ASSIGN_OR_RETURN(auto targets, ParseTargets(args, false));
  if (targets.size() == 1 && targets[0].name.empty()) {
    const api::KindInfo& kind = *targets[0].kind;
    MKUBE_ASSIGN_OR_RETURN(auto list, s.Worded(s.res().List(kind, ns, f.labels, f.fields)));
    std::vector<size_t> widths;
    if (list.items.empty() && !f.watch && (f.output.empty() || f.output == "wide")) {
      NoResources(s, kind, f.all_namespaces);
    } else {
      PrintObjects(kind, list.items, f, false, false, true, &widths);
    }
    if (!f.watch) return absl::OkStatus();
    std::cout.flush();
    return WatchRows(s, kind, f, ns, list.resource_version, &widths);
  }
  // Named objects: one table per kind, errors for the missing after the rest.
  std::vector<absl::Status> errors;
  std::vector<std::pair<const api::KindInfo*, std::vector<MessagePtr>>> found;
  for (const auto& t : targets) {
    auto obj = s.res().Get(*t.kind, ns.empty() ? s.ns() : ns, t.name);
    if (!obj.ok()) {
      errors.push_back(obj.status());
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
  for (const auto& e : errors) s.PrintError(e);
  return errors.empty() ? absl::OkStatus() : Reported();
}

absl::Status Describe(Session& s, const std::vector<std::string>& args, const std::string& labels) {
  MKUBE_ASSIGN_OR_RETURN(auto targets, ParseTargets(args, false));
  std::vector<std::pair<const api::KindInfo*, MessagePtr>> objs;
  bool failed = false;
  if (targets.size() == 1 && targets[0].name.empty()) {
    MKUBE_ASSIGN_OR_RETURN(auto list, s.Worded(s.res().List(*targets[0].kind, s.ns(), labels, "")));
    for (const auto& i : list.items) objs.push_back({targets[0].kind, i});
    if (objs.empty()) NoResources(s, *targets[0].kind, false);
  } else {
    for (const auto& t : targets) {
      auto obj = s.res().Get(*t.kind, s.ns(), t.name);
      if (!obj.ok()) {
        s.PrintError(obj.status());
        failed = true;
        continue;
      }
      objs.push_back({t.kind, *obj});
    }
  }
  for (size_t i = 0; i < objs.size(); ++i) {
    MKUBE_ASSIGN_OR_RETURN(const std::string text, DescribeOne(s, *objs[i].first, objs[i].second));
    if (i > 0) std::cout << "\n\n";
    std::cout << text;
  }
  return failed ? Reported() : absl::OkStatus();
}

}  // namespace mkube::cli
