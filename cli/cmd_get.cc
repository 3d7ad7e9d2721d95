// get and describe.
#include <algorithm>
#include <iostream>
#include <set>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "api/codec.h"
#include "api/object.h"
#include "api/printers.h"
#include "cli/commands.h"
#include "cli/describe.h"
#include "cli/jsonpath.h"
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

// -o custom-columns=HEADER:PATH,...: a column per path, "<none>" where it selects nothing.
absl::StatusOr<api::Table> CustomColumns(const std::string& spec,
                                         const std::vector<MessagePtr>& items) {
  api::Table t;
  std::vector<JsonPath> paths;
  for (absl::string_view col : absl::StrSplit(spec, ',')) {
    const size_t colon = col.find(':');
    if (colon == absl::string_view::npos) {
      return UserError(fmt::format(
          "error: unexpected custom-columns spec: {}, expected <header>:<json-path-expr>",
          std::string(col)));
    }
    auto path = JsonPath::ParseRelaxed(std::string(col.substr(colon + 1)));
    if (!path.ok()) return UserError("error: " + std::string(path.status().message()));
    t.columns.emplace_back(col.substr(0, colon));
    paths.push_back(std::move(*path));
  }
  for (const auto& i : items) {
    const json obj = api::EncodeJson(*i);
    std::vector<std::string>& row = t.rows.emplace_back();
    for (const auto& p : paths) {
      std::vector<std::string> cells;
      for (const json* v : p.Values(obj)) cells.push_back(JsonPathText(*v));
      row.push_back(cells.empty() ? "<none>" : absl::StrJoin(cells, ","));
    }
  }
  return t;
}

// As -o asks: a table (kind-prefixed names when several kinds are shown), yaml, json, names,
// a JSONPath template or custom columns. `widths` (optional) carries the table's column
// widths from one call to the next.
absl::Status PrintObjects(const api::KindInfo& kind, const std::vector<MessagePtr>& items,
                          const GetFlags& f, bool single, bool prefix_kind, bool headers,
                          std::vector<size_t>* widths = nullptr) {
  if (f.output == "json" || f.output == "yaml") {
    json j = single && items.size() == 1 ? api::EncodeJson(*items[0]) : ListJson(items);
    if (!f.show_managed_fields) {
      // As kubectl prints objects: who manages which field is noise unless asked for.
      auto drop = [](json& o) {
        if (o.contains("metadata")) o["metadata"].erase("managedFields");
      };
      if (j.contains("items")) {
        for (auto& item : j["items"]) drop(item);
      } else {
        drop(j);
      }
    }
    std::cout << (f.output == "json" ? j.dump(4) + "\n" : api::JsonToYaml(j));
    return absl::OkStatus();
  }
  if (f.output.rfind("jsonpath=", 0) == 0) {
    auto path = JsonPath::Parse(f.output.substr(9));
    if (!path.ok()) return UserError("error: " + std::string(path.status().message()));
    json j = single && items.size() == 1 ? api::EncodeJson(*items[0]) : ListJson(items);
    std::cout << path->Execute(j);
    return absl::OkStatus();
  }
  if (f.output == "name") {
    for (const auto& i : items)
      std::cout << KindName(kind) << "/" << api::MetaOf(*i).name() << "\n";
    return absl::OkStatus();
  }
  api::Table t;
  api::TableOptions o;
  if (f.output.rfind("custom-columns=", 0) == 0) {
    MKUBE_ASSIGN_OR_RETURN(t, CustomColumns(f.output.substr(15), items));
  } else {
    o.wide = f.output == "wide";
    o.show_labels = f.show_labels;
    o.with_namespace = f.all_namespaces && kind.namespaced;
    std::vector<const google::protobuf::Message*> raw;
    for (const auto& i : items) raw.push_back(i.get());
    t = api::MakeTable(kind, raw, o);
    if (prefix_kind) {
      const size_t name_col = o.with_namespace ? 1 : 0;
      for (auto& row : t.rows) row[name_col] = KindName(kind) + "/" + row[name_col];
    }
  }
  std::cout << api::RenderTable(t, headers && !f.no_headers, widths);
  return absl::OkStatus();
}

absl::Status CheckOutput(const std::string& o) {
  static const std::set<std::string> kOutputs = {"", "wide", "yaml", "json", "name"};
  if (kOutputs.contains(o)) return absl::OkStatus();
  if (o == "jsonpath" || o == "jsonpath=") {
    return UserError("error: template format specified but no template given");
  }
  if (o == "custom-columns" || o == "custom-columns=") {
    return UserError("error: custom-columns format specified but no custom columns given");
  }
  if (o.rfind("jsonpath=", 0) == 0) {
    if (auto p = JsonPath::Parse(o.substr(9)); !p.ok()) {
      return UserError("error: " + std::string(p.status().message()));
    }
    return absl::OkStatus();
  }
  if (o.rfind("custom-columns=", 0) == 0) return absl::OkStatus();
  return UserError(
      fmt::format("error: unable to match a printer suitable for the output format \"{}\", allowed "
                  "formats are: "
                  "custom-columns,json,jsonpath,name,wide,yaml",
                  o));
}

// --sort-by=PATH: numbers by value, the rest as text; objects without the field first.
absl::Status SortItems(const std::string& sort_by, std::vector<MessagePtr>* items) {
  if (sort_by.empty()) return absl::OkStatus();
  auto path = JsonPath::ParseRelaxed(sort_by);
  if (!path.ok()) return UserError("error: " + std::string(path.status().message()));
  std::vector<std::pair<json, MessagePtr>> keyed;
  for (auto& i : *items) {
    const json obj = api::EncodeJson(*i);
    auto values = path->Values(obj);
    keyed.emplace_back(values.empty() ? json() : json(*values[0]), std::move(i));
  }
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) {
    if (a.first.is_null() || b.first.is_null()) return a.first.is_null() && !b.first.is_null();
    if (a.first.is_number() && b.first.is_number()) {
      return a.first.template get<double>() < b.first.template get<double>();
    }
    return JsonPathText(a.first) < JsonPathText(b.first);
  });
  items->clear();
  for (auto& [key, item] : keyed) items->push_back(std::move(item));
  return absl::OkStatus();
}

// Prints rows as objects change, until interrupted.
absl::Status WatchRows(Session& s, const api::KindInfo& kind, const GetFlags& f,
                       const std::string& ns, const std::string& rv, std::vector<size_t>* widths) {
  apiserver::WatchRequest req;
  req.set_resource(kind.request_resource());
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
    MKUBE_RETURN_IF_ERROR(PrintObjects(kind, {*obj}, rows, false, false, false, widths));
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
  if (kind.kind == "Pod") {
    const auto& pod = static_cast<const api::Pod&>(*obj);
    // The ports each started container's image exposes, as its node holds the image.
    std::map<std::string, std::vector<std::string>> image_ports;
    for (const auto& cs : pod.status().container_statuses()) {
      if (pod.spec().node_name().empty() || cs.image_id().empty()) continue;
      image_ports[cs.name()] = ImageExposedPorts(s, pod.spec().node_name(), cs.image());
    }
    return DescribePod(pod, events, now, image_ports);
  }
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
  std::vector<Target> targets;
  if (!args.empty() && args[0] == "all") {
    for (const api::KindInfo* k : api::AllCategory()) targets.push_back({k, ""});
  } else {
    MKUBE_ASSIGN_OR_RETURN(targets, ParseTargets(args, false));
  }
  if (targets.size() == 1 && targets[0].name.empty()) {
    const api::KindInfo& kind = *targets[0].kind;
    MKUBE_ASSIGN_OR_RETURN(auto list, s.Worded(s.res().List(kind, ns, f.labels, f.fields)));
    MKUBE_RETURN_IF_ERROR(SortItems(f.sort_by, &list.items));
    std::vector<size_t> widths;
    if (list.items.empty() && !f.watch && (f.output.empty() || f.output == "wide")) {
      NoResources(s, kind, f.all_namespaces);
    } else {
      MKUBE_RETURN_IF_ERROR(PrintObjects(kind, list.items, f, false, false, true, &widths));
    }
    if (!f.watch) return absl::OkStatus();
    std::cout.flush();
    return WatchRows(s, kind, f, ns, list.resource_version, &widths);
  }
  if (targets[0].name.empty()) {  // several types ("deploy,po", "all"): a table for each
    if (f.watch) return UserError("error: you may only specify a single resource type");
    bool any = false;
    for (const auto& t : targets) {
      MKUBE_ASSIGN_OR_RETURN(auto list, s.Worded(s.res().List(*t.kind, ns, f.labels, f.fields)));
      if (list.items.empty()) continue;
      if (any && f.output != "name") std::cout << "\n";
      MKUBE_RETURN_IF_ERROR(SortItems(f.sort_by, &list.items));
      MKUBE_RETURN_IF_ERROR(PrintObjects(*t.kind, list.items, f, false, true, true));
      any = true;
    }
    if (!any) NoResources(s, *targets[0].kind, f.all_namespaces);
    return absl::OkStatus();
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
    MKUBE_RETURN_IF_ERROR(
        PrintObjects(*found[i].first, found[i].second, f, single, found.size() > 1, true));
  }
  for (const auto& e : errors) s.PrintError(e);
  return errors.empty() ? absl::OkStatus() : Reported();
}

absl::Status GetRaw(Session& s, const std::string& raw) {
  // The REST paths of Kubernetes' API, answered from the gRPC API: /api/v1/..., /apis/G/V/...,
  // [namespaces/NS/]RESOURCE[/NAME], and the health endpoints.
  const std::string path = raw.substr(0, raw.find('?'));
  if (path == "/healthz" || path == "/livez" || path == "/readyz") {
    MKUBE_RETURN_IF_ERROR(
        s.Worded(s.res().List(*api::FindResource("namespaces"), "", "", "").status()));
    std::cout << "ok";
    return absl::OkStatus();
  }
  std::vector<std::string> parts = absl::StrSplit(path, '/', absl::SkipEmpty());
  size_t i = 0;
  std::string group, version;
  if (parts.size() >= 2 && parts[0] == "api") {
    version = parts[1];
    i = 2;
  } else if (parts.size() >= 3 && parts[0] == "apis") {
    group = parts[1];
    version = parts[2];
    i = 3;
  } else {
    return UserError(fmt::format("Error from server (NotFound): the server could not find the "
                                 "requested resource (get {})", raw));
  }
  std::string ns;
  if (parts.size() >= i + 3 && parts[i] == "namespaces") {
    ns = parts[i + 1];
    i += 2;
  }
  const api::KindInfo* kind =
      i < parts.size() ? api::FindResource(group.empty() ? parts[i] : parts[i] + "." + group)
                       : nullptr;
  if (!kind || kind->resource != parts[i] || kind->group != group || kind->version != version ||
      parts.size() > i + 2 || (!ns.empty() && !kind->namespaced)) {
    return UserError(fmt::format("Error from server (NotFound): the server could not find the "
                                 "requested resource (get {})", raw));
  }
  if (i + 1 < parts.size()) {
    const std::string& name = parts[i + 1];
    MKUBE_ASSIGN_OR_RETURN(auto obj, s.Worded(s.res().Get(*kind, ns, name)));
    std::cout << api::EncodeJson(*obj).dump();
    return absl::OkStatus();
  }
  MKUBE_ASSIGN_OR_RETURN(auto list, s.Worded(s.res().List(*kind, ns, "", "")));
  json j;
  j["kind"] = kind->kind + "List";
  j["apiVersion"] = kind->api_version();
  j["metadata"]["resourceVersion"] = list.resource_version;
  j["items"] = json::array();
  for (const auto& item : list.items) j["items"].push_back(api::EncodeJson(*item));
  std::cout << j.dump();
  return absl::OkStatus();
}

absl::Status Describe(Session& s, const std::vector<std::string>& args, const std::string& labels) {
  MKUBE_ASSIGN_OR_RETURN(auto targets, ParseTargets(args, false));
  std::vector<std::pair<const api::KindInfo*, MessagePtr>> objs;
  bool failed = false;
  if (targets[0].name.empty()) {  // types only: every object of each
    for (const auto& t : targets) {
      MKUBE_ASSIGN_OR_RETURN(auto list, s.Worded(s.res().List(*t.kind, s.ns(), labels, "")));
      for (const auto& i : list.items) objs.push_back({t.kind, i});
    }
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
