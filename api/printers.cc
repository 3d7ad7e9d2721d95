#include "api/printers.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>

#include "absl/strings/str_join.h"
#include "api/labels.h"
#include "api/object.h"
#include "fmt/format.h"
#include "proto/api/apps.pb.h"
#include "proto/api/batch.pb.h"

namespace mkube::api {
namespace {

using Row = std::vector<std::string>;

std::string OrNone(const std::string& s) { return s.empty() ? "<none>" : s; }

// The containers' names and images, and the selector: the wide columns of workloads.
Row Workload(const PodTemplateSpec& tmpl, const std::string& selector) {
  std::vector<std::string> names, images;
  for (const auto& c : tmpl.spec().containers()) {
    names.push_back(c.name());
    images.push_back(c.image());
  }
  return {absl::StrJoin(names, ","), absl::StrJoin(images, ","), OrNone(selector)};
}

std::string SelectorString(const LabelSelector& s) {
  auto sel = Selector::FromLabelSelector(s);
  return sel.ok() ? sel->String() : "";
}

bool PodReady(const Pod& pod) {
  for (const auto& c : pod.status().conditions()) {
    if (c.type() == "Ready") return c.status() == "True";
  }
  return false;
}

struct Printer {
  std::vector<std::string> columns, wide_columns;
  std::function<Row(const google::protobuf::Message&, const TableOptions&, bool wide)> row;
};

Row PodRow(const Pod& pod, const TableOptions& o, bool wide) {
  int ready = 0, restarts = 0;
  std::optional<absl::Time> last_restart;
  for (const auto& cs : pod.status().container_statuses()) {
    restarts += cs.restart_count();
    if (cs.ready() && cs.state().has_running()) ++ready;
    if (auto t = ParseRfc3339(cs.last_state().terminated().finished_at())) {
      if (!last_restart || *t > *last_restart) last_restart = t;
    }
  }
  std::string restart_cell = std::to_string(restarts);
  if (restarts > 0 && last_restart) {
    restart_cell += " (" + HumanDuration(o.now - *last_restart) + " ago)";
  }
  Row row = {pod.metadata().name(), fmt::format("{}/{}", ready, pod.spec().containers_size()),
             PodStatusReason(pod), restart_cell, Age(pod.metadata().creation_timestamp(), o.now)};
  if (wide) {
    row.push_back(OrNone(pod.status().pod_ip()));
    row.push_back(OrNone(pod.spec().node_name()));
    row.push_back(OrNone(pod.status().nominated_node_name()));
    row.push_back("<none>");
  }
  return row;
}

Row NodeRow(const Node& node, const TableOptions& o, bool wide) {
  Row row = {node.metadata().name(), NodeStatus(node), NodeRoles(node),
             Age(node.metadata().creation_timestamp(), o.now),
             node.status().node_info().kubelet_version()};
  if (wide) {
    std::string internal, external;
    for (const auto& a : node.status().addresses()) {
      if (a.type() == "InternalIP" && internal.empty()) internal = a.address();
      if (a.type() == "ExternalIP" && external.empty()) external = a.address();
    }
    const auto& info = node.status().node_info();
    row.insert(row.end(),
               {OrNone(internal), OrNone(external), OrNone(info.os_image()),
                OrNone(info.kernel_version()), OrNone(info.container_runtime_version())});
  }
  return row;
}

Row DeploymentRow(const Deployment& d, const TableOptions& o, bool wide) {
  const int32_t desired = d.spec().has_replicas() ? d.spec().replicas() : 1;
  Row row = {d.metadata().name(), fmt::format("{}/{}", d.status().ready_replicas(), desired),
             std::to_string(d.status().updated_replicas()),
             std::to_string(d.status().available_replicas()),
             Age(d.metadata().creation_timestamp(), o.now)};
  if (wide) {
    Row w = Workload(d.spec().template_(), SelectorString(d.spec().selector()));
    row.insert(row.end(), w.begin(), w.end());
  }
  return row;
}

Row ReplicaSetRow(const ReplicaSet& rs, const TableOptions& o, bool wide) {
  const int32_t desired = rs.spec().has_replicas() ? rs.spec().replicas() : 1;
  Row row = {rs.metadata().name(), std::to_string(desired), std::to_string(rs.status().replicas()),
             std::to_string(rs.status().ready_replicas()),
             Age(rs.metadata().creation_timestamp(), o.now)};
  if (wide) {
    Row w = Workload(rs.spec().template_(), SelectorString(rs.spec().selector()));
    row.insert(row.end(), w.begin(), w.end());
  }
  return row;
}

Row ReplicationControllerRow(const ReplicationController& rc, const TableOptions& o, bool wide) {
  const int32_t desired = rc.spec().has_replicas() ? rc.spec().replicas() : 1;
  Row row = {rc.metadata().name(), std::to_string(desired), std::to_string(rc.status().replicas()),
             std::to_string(rc.status().ready_replicas()),
             Age(rc.metadata().creation_timestamp(), o.now)};
  if (wide) {
    Row w = Workload(rc.spec().template_(), Selector::FromMap(rc.spec().selector()).String());
    row.insert(row.end(), w.begin(), w.end());
  }
  return row;
}

Row DaemonSetRow(const DaemonSet& ds, const TableOptions& o, bool wide) {
  const auto& s = ds.status();
  Row row = {ds.metadata().name(),
             std::to_string(s.desired_number_scheduled()),
             std::to_string(s.current_number_scheduled()),
             std::to_string(s.number_ready()),
             std::to_string(s.updated_number_scheduled()),
             std::to_string(s.number_available()),
             OrNone(Selector::FromMap(ds.spec().template_().spec().node_selector()).String()),
             Age(ds.metadata().creation_timestamp(), o.now)};
  if (wide) {
    Row w = Workload(ds.spec().template_(), SelectorString(ds.spec().selector()));
    row.insert(row.end(), w.begin(), w.end());
  }
  return row;
}

Row JobRow(const Job& job, const TableOptions& o, bool wide) {
  std::string completions;
  if (job.spec().has_completions()) {
    completions = fmt::format("{}/{}", job.status().succeeded(), job.spec().completions());
  } else if (job.spec().has_parallelism() && job.spec().parallelism() > 1) {
    completions = fmt::format("{}/1 of {}", job.status().succeeded(), job.spec().parallelism());
  } else {
    completions = fmt::format("{}/1", job.status().succeeded());
  }
  std::string duration;
  if (auto start = ParseRfc3339(job.status().start_time())) {
    auto end = ParseRfc3339(job.status().completion_time());
    duration = HumanDuration((end ? *end : o.now) - *start);
  }
  Row row = {job.metadata().name(), completions, duration,
             Age(job.metadata().creation_timestamp(), o.now)};
  if (wide) {
    Row w = Workload(job.spec().template_(), SelectorString(job.spec().selector()));
    row.insert(row.end(), w.begin(), w.end());
  }
  return row;
}

Row CronJobRow(const CronJob& cj, const TableOptions& o, bool wide) {
  const auto& spec = cj.spec();
  const std::string& last = cj.status().last_schedule_time();
  Row row = {cj.metadata().name(),
             spec.schedule(),
             spec.has_time_zone() ? spec.time_zone() : "<none>",
             spec.has_suspend() ? (spec.suspend() ? "True" : "False") : "<unset>",
             std::to_string(cj.status().active_size()),
             last.empty() ? "<none>" : Age(last, o.now),
             Age(cj.metadata().creation_timestamp(), o.now)};
  if (wide) {
    const auto& job = spec.job_template().spec();
    Row w = Workload(job.template_(), SelectorString(job.selector()));
    row.insert(row.end(), w.begin(), w.end());
  }
  return row;
}

Row EventRow(const Event& e, const TableOptions& o, bool) {
  std::string last = e.last_timestamp().empty() ? e.event_time() : e.last_timestamp();
  if (last.empty()) last = e.metadata().creation_timestamp();
  std::string kind = e.involved_object().kind();
  std::transform(kind.begin(), kind.end(), kind.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return {Age(last, o.now), e.type(), e.reason(), kind + "/" + e.involved_object().name(),
          e.message()};
}

template <typename T>
Printer Of(std::vector<std::string> columns, std::vector<std::string> wide,
           Row (*fn)(const T&, const TableOptions&, bool)) {
  return Printer{std::move(columns), std::move(wide),
                 [fn](const google::protobuf::Message& m, const TableOptions& o, bool w) {
                   return fn(static_cast<const T&>(m), o, w);
                 }};
}

const std::map<std::string, Printer>& Printers() {
  static const auto* printers = new std::map<std::string, Printer>{
      {"Pod", Of<Pod>({"NAME", "READY", "STATUS", "RESTARTS", "AGE"},
                      {"IP", "NODE", "NOMINATED NODE", "READINESS GATES"}, PodRow)},
      {"Node",
       Of<Node>({"NAME", "STATUS", "ROLES", "AGE", "VERSION"},
                {"INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION", "CONTAINER-RUNTIME"},
                NodeRow)},
      {"Deployment", Of<Deployment>({"NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"},
                                    {"CONTAINERS", "IMAGES", "SELECTOR"}, DeploymentRow)},
      {"ReplicaSet", Of<ReplicaSet>({"NAME", "DESIRED", "CURRENT", "READY", "AGE"},
                                    {"CONTAINERS", "IMAGES", "SELECTOR"}, ReplicaSetRow)},
      {"ReplicationController",
       Of<ReplicationController>({"NAME", "DESIRED", "CURRENT", "READY", "AGE"},
                                 {"CONTAINERS", "IMAGES", "SELECTOR"}, ReplicationControllerRow)},
      {"DaemonSet", Of<DaemonSet>({"NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE",
                                   "NODE SELECTOR", "AGE"},
                                  {"CONTAINERS", "IMAGES", "SELECTOR"}, DaemonSetRow)},
      {"Job", Of<Job>({"NAME", "COMPLETIONS", "DURATION", "AGE"},
                      {"CONTAINERS", "IMAGES", "SELECTOR"}, JobRow)},
      {"CronJob", Of<CronJob>({"NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE",
                               "LAST SCHEDULE", "AGE"},
                              {"CONTAINERS", "IMAGES", "SELECTOR"}, CronJobRow)},
      {"Event", Of<Event>({"LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"}, {}, EventRow)},
      {"Namespace", Of<Namespace>(
                        {"NAME", "STATUS", "AGE"}, {},
                        +[](const Namespace& ns, const TableOptions& o, bool) -> Row {
                          return {ns.metadata().name(), ns.status().phase(),
                                  Age(ns.metadata().creation_timestamp(), o.now)};
                        })},
      {"PodDisruptionBudget",
       Of<PodDisruptionBudget>(
           {"NAME", "MIN AVAILABLE", "MAX UNAVAILABLE", "ALLOWED DISRUPTIONS", "AGE"}, {},
           +[](const PodDisruptionBudget& p, const TableOptions& o, bool) -> Row {
             auto value = [](const IntOrString& v, bool set) -> std::string {
               if (!set) return "N/A";
               return v.has_int_value() ? std::to_string(v.int_value()) : v.string_value();
             };
             return {p.metadata().name(), value(p.spec().min_available(), p.spec().has_min_available()),
                     value(p.spec().max_unavailable(), p.spec().has_max_unavailable()),
                     std::to_string(p.status().disruptions_allowed()),
                     Age(p.metadata().creation_timestamp(), o.now)};
           })},
      {"Lease", Of<Lease>(
                    {"NAME", "HOLDER", "AGE"}, {},
                    +[](const Lease& l, const TableOptions& o, bool) -> Row {
                      return {l.metadata().name(), l.spec().holder_identity(),
                              Age(l.metadata().creation_timestamp(), o.now)};
                    })},
  };
  return *printers;
}

}  // namespace

std::string HumanDuration(absl::Duration d) {
  const int64_t seconds = absl::ToInt64Seconds(d);
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 60 * 2) return fmt::format("{}s", seconds);
  const int64_t minutes = seconds / 60;
  if (minutes < 10) {
    return seconds % 60 == 0 ? fmt::format("{}m", minutes)
                             : fmt::format("{}m{}s", minutes, seconds % 60);
  }
  if (minutes < 60 * 3) return fmt::format("{}m", minutes);
  const int64_t hours = minutes / 60;
  if (hours < 8) {
    return minutes % 60 == 0 ? fmt::format("{}h", hours)
                             : fmt::format("{}h{}m", hours, minutes % 60);
  }
  if (hours < 48) return fmt::format("{}h", hours);
  if (hours < 24 * 8) {
    return hours % 24 == 0 ? fmt::format("{}d", hours / 24)
                           : fmt::format("{}d{}h", hours / 24, hours % 24);
  }
  if (hours < 24 * 365 * 2) return fmt::format("{}d", hours / 24);
  if (hours < 24 * 365 * 8) {
    const int64_t days = (hours / 24) % 365;
    return days == 0 ? fmt::format("{}y", hours / 24 / 365)
                     : fmt::format("{}y{}d", hours / 24 / 365, days);
  }
  return fmt::format("{}y", hours / 24 / 365);
}

std::string Age(const std::string& rfc3339, absl::Time now) {
  auto t = ParseRfc3339(rfc3339);
  return t ? HumanDuration(now - *t) : "<unknown>";
}

std::string PodStatusReason(const Pod& pod) {
  std::string reason = pod.status().reason().empty() ? pod.status().phase() : pod.status().reason();
  if (reason.empty()) reason = "Pending";
  bool has_running = false;
  const auto& statuses = pod.status().container_statuses();
  for (int i = statuses.size() - 1; i >= 0; --i) {
    const auto& st = statuses[i].state();
    if (st.has_waiting() && !st.waiting().reason().empty()) {
      reason = st.waiting().reason();
    } else if (st.has_terminated() && !st.terminated().reason().empty()) {
      reason = st.terminated().reason();
    } else if (st.has_terminated()) {
      reason = st.terminated().signal() != 0
                   ? fmt::format("Signal:{}", st.terminated().signal())
                   : fmt::format("ExitCode:{}", st.terminated().exit_code());
    } else if (statuses[i].ready() && st.has_running()) {
      has_running = true;
    }
  }
  // A completed container next to a running one: the pod is still running.
  if (reason == "Completed" && has_running) reason = PodReady(pod) ? "Running" : "NotReady";
  // Its node is lost (the node lifecycle controller says so): nobody can tell how it is.
  // kubectl prints this only once such a pod is being deleted; mkube as soon as it is known.
  if (pod.status().reason() == "NodeLost") return "Unknown";
  if (!pod.metadata().deletion_timestamp().empty()) reason = "Terminating";
  return reason;
}

std::string NodeStatus(const Node& node) {
  std::string status = "Unknown";
  for (const auto& c : node.status().conditions()) {
    if (c.type() == "Ready") status = c.status() == "True" ? "Ready" : "NotReady";
  }
  if (node.spec().unschedulable()) status += ",SchedulingDisabled";
  return status;
}

std::string NodeRoles(const Node& node) {
  static constexpr std::string_view kPrefix = "node-role.kubernetes.io/";
  std::vector<std::string> roles;
  for (const auto& [k, v] : node.metadata().labels()) {
    if (k.compare(0, kPrefix.size(), kPrefix) == 0 && k.size() > kPrefix.size()) {
      roles.push_back(k.substr(kPrefix.size()));
    } else if (k == "kubernetes.io/role" && !v.empty()) {
      roles.push_back(v);
    }
  }
  std::sort(roles.begin(), roles.end());
  roles.erase(std::unique(roles.begin(), roles.end()), roles.end());
  return roles.empty() ? "<none>" : absl::StrJoin(roles, ",");
}

std::string LabelsString(const google::protobuf::Map<std::string, std::string>& labels) {
  std::map<std::string, std::string> sorted(labels.begin(), labels.end());
  std::vector<std::string> parts;
  for (const auto& [k, v] : sorted) parts.push_back(k + "=" + v);
  return parts.empty() ? "<none>" : absl::StrJoin(parts, ",");
}

Table MakeTable(const KindInfo& kind, const std::vector<const google::protobuf::Message*>& objects,
                const TableOptions& options) {
  static const Printer kGeneric{
      {"NAME", "AGE"}, {}, [](const google::protobuf::Message& m, const TableOptions& o, bool) {
        return Row{MetaOf(m).name(), Age(MetaOf(m).creation_timestamp(), o.now)};
      }};
  auto it = Printers().find(kind.kind);
  const Printer& p = it == Printers().end() ? kGeneric : it->second;
  Table t;
  if (options.with_namespace) t.columns.push_back("NAMESPACE");
  t.columns.insert(t.columns.end(), p.columns.begin(), p.columns.end());
  if (options.wide) t.columns.insert(t.columns.end(), p.wide_columns.begin(), p.wide_columns.end());
  if (options.show_labels) t.columns.push_back("LABELS");
  for (const auto* obj : objects) {
    Row row;
    if (options.with_namespace) row.push_back(MetaOf(*obj).namespace_());
    Row cells = p.row(*obj, options, options.wide);
    row.insert(row.end(), cells.begin(), cells.end());
    if (options.show_labels) row.push_back(LabelsString(MetaOf(*obj).labels()));
    t.rows.push_back(std::move(row));
  }
  return t;
}

std::string RenderTable(const Table& table, bool headers, std::vector<size_t>* widths) {
  std::vector<const Row*> lines;
  if (headers) lines.push_back(&table.columns);
  for (const auto& r : table.rows) lines.push_back(&r);
  std::vector<size_t> width(table.columns.size(), 0);
  if (widths) {
    for (size_t i = 0; i < width.size() && i < widths->size(); ++i) width[i] = (*widths)[i];
  }
  for (const Row* r : lines) {
    for (size_t i = 0; i < r->size() && i < width.size(); ++i)
      width[i] = std::max(width[i], (*r)[i].size());
  }
  std::string out;
  for (const Row* r : lines) {
    for (size_t i = 0; i < r->size(); ++i) {
      out += (*r)[i];
      // Every cell but the last is padded: three spaces past the widest, six at least.
      if (i + 1 < r->size()) out.append(std::max<size_t>(width[i] + 3, 6) - (*r)[i].size(), ' ');
    }
    out += '\n';
  }
  if (widths) *widths = width;
  return out;
}

}  // namespace mkube::api
