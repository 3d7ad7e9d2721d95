#include "cli/describe.h"

#include <algorithm>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "api/codec.h"
#include "api/labels.h"
#include "api/object.h"
#include "api/printers.h"
#include "api/quantity.h"
#include "fmt/format.h"

namespace mkube::cli {
namespace {

// Writes "Key:<pad>value" lines with the values of one block aligned, as kubectl's describe
// does with its tab writer; nested blocks are indented by two spaces a level.
class Out {
 public:
  struct F {
    int level;
    std::string key, value;
  };
  // A block of fields, some nested under others: their values start at one column.
  void Block(const std::vector<F>& fields) {
    size_t col = 0;
    for (const auto& f : fields)
      col = std::max(col, 2 * static_cast<size_t>(f.level) + f.key.size() + 1 + 2);
    last_col_ = col;
    for (const auto& f : fields) Field(f.level, f.key, f.value, col);
  }
  void Fields(int level, const std::vector<std::pair<std::string, std::string>>& fields) {
    std::vector<F> block;
    for (const auto& [k, v] : fields) block.push_back({level, k, v});
    Block(block);
  }
  // One field; its value at `col` (0: the column of the last block).
  void Field(int level, const std::string& key, const std::string& value, size_t col = 0) {
    std::string head = std::string(2 * static_cast<size_t>(level), ' ') + key + ":";
    if (col == 0) col = last_col_;
    col = std::max(col, head.size() + 2);
    // Continuation lines of a multi-line value line up with its first.
    std::vector<std::string> lines = absl::StrSplit(value, '\n');
    text_ += head;
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i > 0) text_ += "\n";
      const size_t at = i == 0 ? head.size() : 0;
      if (!lines[i].empty()) text_ += std::string(col - at, ' ') + lines[i];
    }
    text_ += "\n";
  }
  void Line(const std::string& s) { text_ += s + "\n"; }
  // A table with padding 2 under a header row and its dashes.
  void Table(int level, const std::vector<std::string>& header,
             const std::vector<std::vector<std::string>>& rows) {
    std::vector<std::vector<std::string>> all = {header, {}};
    for (const auto& h : header) all[1].push_back(std::string(h.size(), '-'));
    all.insert(all.end(), rows.begin(), rows.end());
    std::vector<size_t> width(header.size(), 0);
    for (const auto& r : all) {
      for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
    }
    for (const auto& r : all) {
      std::string line(2 * static_cast<size_t>(level), ' ');
      for (size_t i = 0; i < r.size(); ++i) {
        line += r[i];
        if (i + 1 < r.size()) line += std::string(width[i] + 2 - r[i].size(), ' ');
      }
      text_ += line + "\n";
    }
  }
  std::string str() const { return text_; }

 private:
  std::string text_;
  size_t last_col_ = 0;
};

std::string Time(const std::string& rfc3339) {
  auto t = api::ParseRfc3339(rfc3339);
  return t ? absl::FormatTime("%a, %d %b %Y %H:%M:%S %z", *t, absl::LocalTimeZone()) : "<unset>";
}

// "k=v" one per line, sorted; "<none>" when empty.
std::string MapLines(const google::protobuf::Map<std::string, std::string>& m,
                     const char* sep = "=") {
  if (m.empty()) return "<none>";
  std::map<std::string, std::string> sorted(m.begin(), m.end());
  std::vector<std::string> lines;
  for (const auto& [k, v] : sorted) lines.push_back(k + sep + v);
  return absl::StrJoin(lines, "\n");
}

std::string Annotations(const google::protobuf::Map<std::string, std::string>& m) {
  google::protobuf::Map<std::string, std::string> shown;
  for (const auto& [k, v] : m) {
    if (k != "kubectl.kubernetes.io/last-applied-configuration") shown[k] = v;
  }
  return MapLines(shown, ": ");
}

std::string TaintString(const api::Taint& t) {
  return t.key() + (t.value().empty() ? "" : "=" + t.value()) + ":" + t.effect();
}

std::string TolerationString(const api::Toleration& t) {
  std::string s = t.key();
  if (!t.value().empty()) s += "=" + t.value();
  if (!t.effect().empty()) s += ":" + t.effect();
  if (t.operator_() == "Exists") s += " op=Exists";
  if (t.has_toleration_seconds()) s += fmt::format(" for {}s", t.toleration_seconds());
  return s;
}

void EventsBlock(Out& out, std::vector<api::Event> events, absl::Time now) {
  auto last = [](const api::Event& e) {
    return e.last_timestamp().empty()
               ? (e.event_time().empty() ? e.metadata().creation_timestamp() : e.event_time())
               : e.last_timestamp();
  };
  // Times have whole seconds: within one, the order they were written in (resourceVersion).
  auto version = [](const api::Event& e) {
    int64_t v = 0;
    return absl::SimpleAtoi(e.metadata().resource_version(), &v) ? v : 0;
  };
  auto older = [&](const api::Event& a, const api::Event& b) {
    return std::make_pair(last(a), version(a)) < std::make_pair(last(b), version(b));
  };
  // The scheduler's explanation (for pods that asked for one) is a section of its own: the
  // newest, whole.
  std::vector<api::Event> explanations;
  std::erase_if(events, [&](const api::Event& e) {
    if (e.reason() != "SchedulingExplained") return false;
    explanations.push_back(e);
    return true;
  });
  if (!explanations.empty()) {
    const api::Event& newest = *std::max_element(explanations.begin(), explanations.end(), older);
    out.Line("Scheduling:");
    for (absl::string_view line : absl::StrSplit(newest.message(), '\n', absl::SkipEmpty())) {
      out.Line(std::string(line));
    }
  }
  if (events.empty()) {
    out.Field(0, "Events", "<none>");
    return;
  }
  std::stable_sort(events.begin(), events.end(), older);
  std::vector<std::vector<std::string>> rows;
  for (const auto& e : events) {
    std::string age = api::Age(last(e), now);
    if (e.count() > 1 && !e.first_timestamp().empty()) {
      age = fmt::format("{} (x{} over {})", age, e.count(), api::Age(e.first_timestamp(), now));
    }
    std::string from =
        e.source().component().empty() ? e.reporting_component() : e.source().component();
    rows.push_back({e.type(), e.reason(), age, from, e.message()});
  }
  out.Line("Events:");
  out.Table(1, {"Type", "Reason", "Age", "From", "Message"}, rows);
}

// A container state's lines: "State: Running" and what it has under it.
void AddState(const api::ContainerState& s, int level, const std::string& label,
              std::vector<Out::F>* out) {
  if (s.has_running()) {
    out->push_back({level, label, "Running"});
    out->push_back({level + 1, "Started", Time(s.running().started_at())});
  } else if (s.has_terminated()) {
    out->push_back({level, label, "Terminated"});
    out->push_back({level + 1, "Reason", s.terminated().reason()});
    if (!s.terminated().message().empty()) {
      out->push_back({level + 1, "Message", s.terminated().message()});
    }
    out->push_back({level + 1, "Exit Code", std::to_string(s.terminated().exit_code())});
    if (s.terminated().signal() != 0) {
      out->push_back({level + 1, "Signal", std::to_string(s.terminated().signal())});
    }
    out->push_back({level + 1, "Started", Time(s.terminated().started_at())});
    out->push_back({level + 1, "Finished", Time(s.terminated().finished_at())});
  } else {
    out->push_back({level, label, "Waiting"});
    if (s.has_waiting() && !s.waiting().reason().empty())
      out->push_back({level + 1, "Reason", s.waiting().reason()});
  }
}

std::string Quantities(const google::protobuf::Map<std::string, std::string>& m) {
  std::map<std::string, std::string> sorted(m.begin(), m.end());
  std::vector<std::string> parts;
  for (const auto& [k, v] : sorted) parts.push_back(k + ":" + v);
  return absl::StrJoin(parts, "\n");
}

std::string CpuString(api::Quantity q) {
  return q.milli() % 1000 == 0 ? std::to_string(q.milli() / 1000) : fmt::format("{}m", q.milli());
}

std::string BytesString(api::Quantity q) {
  const int64_t b = q.units();
  if (b == 0) return "0";
  for (auto [unit, size] : std::initializer_list<std::pair<const char*, int64_t>>{
           {"Gi", int64_t{1} << 30}, {"Mi", int64_t{1} << 20}, {"Ki", int64_t{1} << 10}}) {
    if (b % size == 0) return fmt::format("{}{}", b / size, unit);
  }
  return std::to_string(b);
}

api::Quantity Sum(const std::vector<api::Pod>& pods, const std::string& resource, bool limits) {
  api::Quantity total = api::Quantity::FromMilli(0);
  for (const auto& p : pods) {
    for (const auto& c : p.spec().containers()) {
      const auto& m = limits ? c.resources().limits() : c.resources().requests();
      auto it = m.find(resource);
      if (it == m.end()) continue;
      if (auto q = api::Quantity::Parse(it->second); q.ok()) total = total + *q;
    }
  }
  return total;
}

std::string Percent(api::Quantity q,
                    const google::protobuf::Map<std::string, std::string>& allocatable,
                    const std::string& resource) {
  auto it = allocatable.find(resource);
  if (it == allocatable.end()) return "0%";
  auto a = api::Quantity::Parse(it->second);
  if (!a.ok() || a->milli() == 0) return "0%";
  return fmt::format("{}%", q.milli() * 100 / a->milli());
}

// "100m (5%)": the pods' requests or limits of a resource, and their share of the node's.
std::string Usage(const std::vector<api::Pod>& pods, const std::string& resource, bool limits,
                  const google::protobuf::Map<std::string, std::string>& allocatable) {
  const api::Quantity q = Sum(pods, resource, limits);
  return fmt::format("{} ({})", resource == "cpu" ? CpuString(q) : BytesString(q),
                     Percent(q, allocatable, resource));
}

void MetaFields(Out& out, const api::ObjectMeta& m, bool namespaced) {
  std::vector<std::pair<std::string, std::string>> f = {{"Name", m.name()}};
  if (namespaced) f.push_back({"Namespace", m.namespace_()});
  f.push_back({"CreationTimestamp", Time(m.creation_timestamp())});
  f.push_back({"Labels", MapLines(m.labels())});
  f.push_back({"Annotations", Annotations(m.annotations())});
  out.Fields(0, f);
}

// The pod's own fields, down to its controller.
void PodFields(Out& out, const api::Pod& pod, absl::Time now) {
  const auto& m = pod.metadata();
  const auto& st = pod.status();
  std::string node = pod.spec().node_name().empty() ? "<none>" : pod.spec().node_name();
  if (!st.host_ip().empty()) node += "/" + st.host_ip();
  std::vector<std::pair<std::string, std::string>> f = {
      {"Name", m.name()},
      {"Namespace", m.namespace_()},
      {"Priority", "0"},
      {"Node", node},
  };
  if (!st.start_time().empty()) f.push_back({"Start Time", Time(st.start_time())});
  f.push_back({"Labels", MapLines(m.labels())});
  f.push_back({"Annotations", Annotations(m.annotations())});
  std::string status = st.phase().empty() ? "Pending" : st.phase();
  if (!m.deletion_timestamp().empty()) {
    status = fmt::format("Terminating (lasts {})", api::Age(m.deletion_timestamp(), now));
    f.push_back({"Status", status});
    f.push_back(
        {"Termination Grace Period", fmt::format("{}s", m.deletion_grace_period_seconds())});
  } else {
    f.push_back({"Status", status});
  }
  if (!st.reason().empty()) f.push_back({"Reason", st.reason()});
  if (!st.message().empty()) f.push_back({"Message", st.message()});
  f.push_back({"IP", st.pod_ip()});
  if (st.pod_ip().empty()) f.push_back({"IPs", "<none>"});
  out.Fields(0, f);
  if (!st.pod_ip().empty()) {
    out.Line("IPs:");
    out.Fields(1, {{"IP", st.pod_ip()}});
  }
  for (const auto& o : m.owner_references()) {
    if (o.controller()) out.Fields(0, {{"Controlled By", o.kind() + "/" + o.name()}});
  }
}

// One container of the pod, with its status.
void ContainerFields(Out& out, const api::Container& c, const api::PodStatus& st,
                     const std::vector<std::string>& image_ports) {
  out.Line("  " + c.name() + ":");
  const api::ContainerStatus* cs = nullptr;
  for (const auto& s : st.container_statuses()) {
    if (s.name() == c.name()) cs = &s;
  }
  std::vector<std::string> ports, host_ports;
  for (const auto& p : c.ports()) {
    const std::string proto = p.protocol().empty() ? "TCP" : p.protocol();
    ports.push_back(fmt::format("{}/{}", p.container_port(), proto));
    host_ports.push_back(fmt::format("{}/{}", p.host_port(), proto));
  }
  std::vector<Out::F> cf = {
      {2, "Container ID", cs ? cs->container_id() : ""},
      {2, "Image", c.image()},
      {2, "Image ID", cs ? cs->image_id() : ""},
      {2, "Port", ports.empty() ? "<none>" : absl::StrJoin(ports, ", ")},
      {2, "Host Port", host_ports.empty() ? "<none>" : absl::StrJoin(host_ports, ", ")},
  };
  // (mkube's own: what the image's config declares, which a Service may target.)
  std::vector<std::string> exposed;
  for (const auto& p : image_ports) exposed.push_back(absl::AsciiStrToUpper(p));
  if (!exposed.empty()) cf.push_back({2, "Image Ports", absl::StrJoin(exposed, ", ")});
  if (!c.command().empty()) cf.push_back({2, "Command", absl::StrJoin(c.command(), "\n")});
  if (!c.args().empty()) cf.push_back({2, "Args", absl::StrJoin(c.args(), "\n")});
  AddState(cs ? cs->state() : api::ContainerState(), 2, "State", &cf);
  if (cs && (cs->last_state().has_terminated() || cs->last_state().has_running())) {
    AddState(cs->last_state(), 2, "Last State", &cf);
  }
  cf.push_back({2, "Ready", cs && cs->ready() ? "True" : "False"});
  cf.push_back({2, "Restart Count", std::to_string(cs ? cs->restart_count() : 0)});
  if (!c.resources().limits().empty())
    cf.push_back({2, "Limits", Quantities(c.resources().limits())});
  if (!c.resources().requests().empty())
    cf.push_back({2, "Requests", Quantities(c.resources().requests())});
  std::vector<std::string> env;
  for (const auto& e : c.env()) env.push_back(e.name() + ":  " + e.value());
  cf.push_back({2, "Environment", env.empty() ? "<none>" : absl::StrJoin(env, "\n")});
  std::vector<std::string> mounts;
  for (const auto& vm : c.volume_mounts()) {
    mounts.push_back(vm.mount_path() + " from " + vm.name() + (vm.read_only() ? " (ro)" : " (rw)"));
  }
  cf.push_back({2, "Mounts", mounts.empty() ? "<none>" : absl::StrJoin(mounts, "\n")});
  out.Block(cf);
}

// Conditions, volumes, QoS class, node selectors and tolerations.
void PodConditionsAndVolumes(Out& out, const api::Pod& pod) {
  const auto& st = pod.status();
  if (!st.conditions().empty()) {
    out.Line("Conditions:");
    std::vector<std::vector<std::string>> rows;
    for (const auto& c : st.conditions()) rows.push_back({c.type(), c.status()});
    out.Table(1, {"Type", "Status"}, rows);
  }
  std::vector<std::string> volumes;
  for (const auto& v : pod.spec().volumes()) volumes.push_back(v.name());
  std::vector<std::string> tolerations;
  for (const auto& t : pod.spec().tolerations()) tolerations.push_back(TolerationString(t));
  out.Fields(0,
             {{"Volumes", volumes.empty() ? "<none>" : absl::StrJoin(volumes, "\n")},
              {"QoS Class", st.qos_class().empty() ? "BestEffort" : st.qos_class()},
              {"Node-Selectors", MapLines(pod.spec().node_selector())},
              {"Tolerations", tolerations.empty() ? "<none>" : absl::StrJoin(tolerations, "\n")}});
}

}  // namespace

std::string DescribePod(const api::Pod& pod, const std::vector<api::Event>& events,
                        absl::Time now,
                        const std::map<std::string, std::vector<std::string>>& image_ports) {
  Out out;
  PodFields(out, pod, now);
  out.Line("Containers:");
  for (const auto& c : pod.spec().containers()) {
    auto it = image_ports.find(c.name());
    ContainerFields(out, c, pod.status(),
                    it == image_ports.end() ? std::vector<std::string>{} : it->second);
  }
  PodConditionsAndVolumes(out, pod);
  EventsBlock(out, events, now);
  return out.str();
}

std::string DescribeNode(const api::Node& node, const api::Lease* lease,
                         const std::vector<api::Pod>& pods, const std::vector<api::Event>& events,
                         absl::Time now) {
  Out out;
  const auto& m = node.metadata();
  std::vector<std::string> taints;
  for (const auto& t : node.spec().taints()) taints.push_back(TaintString(t));
  out.Fields(0, {{"Name", m.name()},
                 {"Roles", api::NodeRoles(node)},
                 {"Labels", MapLines(m.labels())},
                 {"Annotations", Annotations(m.annotations())},
                 {"CreationTimestamp", Time(m.creation_timestamp())},
                 {"Taints", taints.empty() ? "<none>" : absl::StrJoin(taints, "\n")},
                 {"Unschedulable", node.spec().unschedulable() ? "true" : "false"}});
  if (lease) {
    out.Line("Lease:");
    out.Fields(
        1, {{"HolderIdentity",
             lease->spec().holder_identity().empty() ? "<unset>" : lease->spec().holder_identity()},
            {"AcquireTime", Time(lease->spec().acquire_time())},
            {"RenewTime", Time(lease->spec().renew_time())}});
  } else {
    out.Field(0, "Lease",
              "Failed to get lease: leases.coordination.k8s.io \"" + m.name() + "\" not found");
  }
  out.Line("Conditions:");
  std::vector<std::vector<std::string>> rows;
  for (const auto& c : node.status().conditions()) {
    rows.push_back({c.type(), c.status(), Time(c.last_heartbeat_time()),
                    Time(c.last_transition_time()), c.reason(), c.message()});
  }
  out.Table(1, {"Type", "Status", "LastHeartbeatTime", "LastTransitionTime", "Reason", "Message"},
            rows);
  out.Line("Addresses:");
  std::vector<std::pair<std::string, std::string>> addrs;
  for (const auto& a : node.status().addresses()) addrs.push_back({a.type(), a.address()});
  out.Fields(1, addrs);
  out.Line("Capacity:");
  std::vector<std::pair<std::string, std::string>> cap(node.status().capacity().begin(),
                                                       node.status().capacity().end());
  std::sort(cap.begin(), cap.end());
  out.Fields(1, cap);
  out.Line("Allocatable:");
  std::vector<std::pair<std::string, std::string>> alloc(node.status().allocatable().begin(),
                                                         node.status().allocatable().end());
  std::sort(alloc.begin(), alloc.end());
  out.Fields(1, alloc);
  const auto& info = node.status().node_info();
  out.Line("System Info:");
  out.Fields(1, {{"Machine ID", info.machine_id()},
                 {"Kernel Version", info.kernel_version()},
                 {"OS Image", info.os_image()},
                 {"Operating System", info.operating_system()},
                 {"Architecture", info.architecture()},
                 {"Container Runtime Version", info.container_runtime_version()},
                 {"Kubelet Version", info.kubelet_version()}});
  const auto& allocatable = node.status().allocatable();
  out.Field(0, "Non-terminated Pods", fmt::format("({} in total)", pods.size()), 28);
  std::vector<std::vector<std::string>> pod_rows;
  for (const auto& p : pods) {
    const std::vector<api::Pod> one = {p};
    pod_rows.push_back({p.metadata().namespace_(), p.metadata().name(),
                        Usage(one, "cpu", false, allocatable), Usage(one, "cpu", true, allocatable),
                        Usage(one, "memory", false, allocatable),
                        Usage(one, "memory", true, allocatable),
                        api::Age(p.metadata().creation_timestamp(), now)});
  }
  out.Table(1,
            {"Namespace", "Name", "CPU Requests", "CPU Limits", "Memory Requests", "Memory Limits",
             "Age"},
            pod_rows);
  out.Line("Allocated resources:");
  out.Line("  (Total limits may be over 100 percent, i.e., overcommitted.)");
  out.Table(1, {"Resource", "Requests", "Limits"},
            {{"cpu", Usage(pods, "cpu", false, allocatable), Usage(pods, "cpu", true, allocatable)},
             {"memory", Usage(pods, "memory", false, allocatable),
              Usage(pods, "memory", true, allocatable)}});
  EventsBlock(out, events, now);
  return out.str();
}

std::string DescribeDeployment(const api::Deployment& d,
                               const std::vector<api::ReplicaSet>& replica_sets,
                               const std::vector<api::Event>& events, absl::Time now) {
  Out out;
  const auto& m = d.metadata();
  const auto& s = d.status();
  const int32_t desired = d.spec().has_replicas() ? d.spec().replicas() : 1;
  std::string selector = "<none>";
  if (auto sel = api::Selector::FromLabelSelector(d.spec().selector()); sel.ok())
    selector = sel->String();
  std::vector<std::pair<std::string, std::string>> f = {
      {"Name", m.name()},
      {"Namespace", m.namespace_()},
      {"CreationTimestamp", Time(m.creation_timestamp())},
      {"Labels", MapLines(m.labels())},
      {"Annotations", Annotations(m.annotations())},
      {"Selector", selector},
      {"Replicas", fmt::format("{} desired | {} updated | {} total | {} available | {} unavailable",
                               desired, s.updated_replicas(), s.replicas(), s.available_replicas(),
                               s.unavailable_replicas())},
      {"StrategyType",
       d.spec().strategy().type().empty() ? "RollingUpdate" : d.spec().strategy().type()},
      {"MinReadySeconds", std::to_string(d.spec().min_ready_seconds())},
  };
  if (d.spec().strategy().type() != "Recreate") {
    auto ios = [](const api::IntOrString& v, const char* def) {
      if (v.value_case() == api::IntOrString::kIntValue) return std::to_string(v.int_value());
      return v.string_value().empty() ? std::string(def) : v.string_value();
    };
    const auto& ru = d.spec().strategy().rolling_update();
    f.push_back({"RollingUpdateStrategy",
                 fmt::format("{} max unavailable, {} max surge", ios(ru.max_unavailable(), "25%"),
                             ios(ru.max_surge(), "25%"))});
  }
  out.Fields(0, f);
  out.Line("Pod Template:");
  const auto& tmpl = d.spec().template_();
  out.Fields(1, {{"Labels", MapLines(tmpl.metadata().labels())}});
  out.Line("  Containers:");
  for (const auto& c : tmpl.spec().containers()) {
    out.Line("   " + c.name() + ":");
    std::vector<std::string> ports;
    for (const auto& p : c.ports())
      ports.push_back(
          fmt::format("{}/{}", p.container_port(), p.protocol().empty() ? "TCP" : p.protocol()));
    out.Fields(
        2, {{"Image", c.image()}, {"Port", ports.empty() ? "<none>" : absl::StrJoin(ports, ", ")}});
  }
  if (!s.conditions().empty()) {
    out.Line("Conditions:");
    std::vector<std::vector<std::string>> rows;
    for (const auto& c : s.conditions()) rows.push_back({c.type(), c.status(), c.reason()});
    out.Table(1, {"Type", "Status", "Reason"}, rows);
  }
  std::vector<std::string> old_rs;
  std::string new_rs = "<none>";
  for (size_t i = 0; i < replica_sets.size(); ++i) {
    const auto& rs = replica_sets[i];
    std::string desc =
        fmt::format("{} ({}/{} replicas created)", rs.metadata().name(), rs.status().replicas(),
                    rs.spec().has_replicas() ? rs.spec().replicas() : 1);
    if (i + 1 == replica_sets.size()) {
      new_rs = desc;
    } else if (rs.status().replicas() > 0) {
      old_rs.push_back(desc);
    }
  }
  out.Fields(0, {{"OldReplicaSets", old_rs.empty() ? "<none>" : absl::StrJoin(old_rs, ", ")},
                 {"NewReplicaSet", new_rs}});
  EventsBlock(out, events, now);
  return out.str();
}

std::string DescribeGeneric(const api::KindInfo& kind, const google::protobuf::Message& obj,
                            const std::vector<api::Event>& events, absl::Time now) {
  Out out;
  MetaFields(out, api::MetaOf(obj), kind.namespaced);
  nlohmann::ordered_json j = api::EncodeJson(obj);
  j.erase("metadata");
  j.erase("apiVersion");
  j.erase("kind");
  if (!j.empty()) {
    std::string yaml = api::JsonToYaml(j);
    yaml.pop_back();  // Line adds the newline
    out.Line(yaml);
  }
  EventsBlock(out, events, now);
  return out.str();
}

}  // namespace mkube::cli
