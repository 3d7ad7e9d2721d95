// top nodes|pods: the CPU and memory the agents measured, from metrics.k8s.io, as kubectl
// top prints them.
#include <algorithm>
#include <iostream>
#include <map>

#include "api/object.h"
#include "api/printers.h"
#include "api/quantity.h"
#include "cli/commands.h"
#include "fmt/format.h"
#include "proto/api/core.pb.h"
#include "proto/api/metrics.pb.h"

namespace mkube::cli {

namespace {

// How long kubectl lets a pod go without metrics before it calls that an error.
constexpr absl::Duration kMetricsCreationDelay = absl::Minutes(2);

struct Figures {
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
};

Figures Sum(const google::protobuf::Map<std::string, std::string>& usage, Figures f = {}) {
  for (const auto& [name, text] : usage) {
    auto q = api::Quantity::Parse(text);
    if (!q.ok()) continue;
    if (name == "cpu") f.cpu_milli += q->milli();
    if (name == "memory") f.memory_bytes += q->units();
  }
  return f;
}

// One line of a table, with what it sorts by.
struct Row {
  std::string key;
  Figures figures;
  std::vector<std::string> cells;
};

std::string Cpu(const Figures& f) { return fmt::format("{}m", f.cpu_milli); }
std::string Memory(const Figures& f) { return fmt::format("{}Mi", f.memory_bytes / (1024 * 1024)); }

std::string Percent(int64_t used_milli, const std::string& available) {
  auto q = api::Quantity::Parse(available);
  if (!q.ok()) return "<unknown>";
  const double fraction =
      q->milli() == 0 ? 0 : static_cast<double>(used_milli) / static_cast<double>(q->milli()) * 100;
  return fmt::format("{}%", static_cast<int64_t>(fraction));
}

absl::Status CheckFlags(const std::vector<std::string>& names, const TopFlags& f) {
  if (!f.sort_by.empty() && f.sort_by != "cpu" && f.sort_by != "memory") {
    return UserError("error: --sort-by accepts only cpu or memory");
  }
  if (!names.empty() && (!f.labels.empty() || !f.fields.empty())) {
    return UserError("error: only one of NAME or selector can be provided");
  }
  if (names.size() > 1) return UserError("error: only one NAME may be given");
  return absl::OkStatus();
}

// The measured objects asked for: the named one or those the selectors pick.
absl::StatusOr<std::vector<MessagePtr>> Measured(Session& s, const api::KindInfo& kind,
                                                 const std::string& ns,
                                                 const std::vector<std::string>& names,
                                                 const TopFlags& f) {
  if (!names.empty()) {
    auto m = s.res().Get(kind, ns, names[0]);
    if (!m.ok()) return s.Worded(m.status());
    return std::vector<MessagePtr>{*m};
  }
  auto list = s.res().List(kind, ns, f.labels, f.fields);
  if (!list.ok()) {
    if (absl::IsNotFound(list.status())) return UserError("error: Metrics API not available");
    return s.Worded(list.status());
  }
  return list->items;
}

// Descending by the chosen figure, else by `key`.
template <typename T>
void SortRows(std::vector<T>& rows, const std::string& by) {
  std::stable_sort(rows.begin(), rows.end(), [&](const T& a, const T& b) {
    if (by == "cpu") return a.figures.cpu_milli > b.figures.cpu_milli;
    if (by == "memory") return a.figures.memory_bytes > b.figures.memory_bytes;
    return a.key < b.key;
  });
}

}  // namespace

absl::Status TopNodes(Session& s, const std::vector<std::string>& names, const TopFlags& f) {
  MKUBE_RETURN_IF_ERROR(CheckFlags(names, f));
  MKUBE_ASSIGN_OR_RETURN(auto metrics,
                         Measured(s, *api::FindResource("nodes.metrics.k8s.io"), "", names, f));
  if (metrics.empty()) return UserError("error: metrics not available yet");
  // What each node has to give: its allocatable (or capacity), the percentages' base.
  const api::KindInfo& node_kind = *api::FindResource("nodes");
  std::vector<MessagePtr> nodes;
  if (!names.empty()) {
    MKUBE_ASSIGN_OR_RETURN(auto node, s.Worded(s.res().Get(node_kind, "", names[0])));
    nodes.push_back(node);
  } else {
    MKUBE_ASSIGN_OR_RETURN(auto list, s.Worded(s.res().List(node_kind, "", f.labels, f.fields)));
    nodes = list.items;
  }
  std::map<std::string, const api::Node*> available;
  for (const auto& n : nodes) {
    const auto* node = static_cast<const api::Node*>(n.get());
    available[node->metadata().name()] = node;
  }
  std::vector<Row> rows;
  for (const auto& m : metrics) {
    const auto& nm = static_cast<const api::NodeMetrics&>(*m);
    Row r{nm.metadata().name(), Sum(nm.usage()), {}};
    r.cells = {r.key, Cpu(r.figures), "<unknown>", Memory(r.figures), "<unknown>"};
    if (auto it = available.find(r.key); it != available.end()) {
      const auto& st = it->second->status();
      const auto& base = f.show_capacity ? st.capacity() : st.allocatable();
      if (base.contains("cpu")) r.cells[2] = Percent(r.figures.cpu_milli, base.at("cpu"));
      if (base.contains("memory")) {
        r.cells[4] = Percent(r.figures.memory_bytes * 1000, base.at("memory"));
      }
      available.erase(it);
    }
    rows.push_back(std::move(r));
  }
  SortRows(rows, f.sort_by);
  api::Table t;
  t.columns = {"NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"};
  for (auto& r : rows) t.rows.push_back(std::move(r.cells));
  // Nodes whose agent gave no figures (stopped, or simulated).
  for (const auto& [name, node] : available) {
    t.rows.push_back({name, "<unknown>", "<unknown>", "<unknown>", "<unknown>"});
  }
  std::cout << api::RenderTable(t, !f.no_headers);
  return absl::OkStatus();
}

namespace {

// Why there are no pod metrics: none yet, or no pods, or pods measured long ago.
absl::Status NoPodMetrics(Session& s, const std::string& ns, const std::vector<std::string>& names,
                          const TopFlags& f) {
  const api::KindInfo& pod_kind = *api::FindResource("pods");
  std::vector<MessagePtr> pods;
  if (!names.empty()) {
    MKUBE_ASSIGN_OR_RETURN(auto pod, s.Worded(s.res().Get(pod_kind, ns, names[0])));
    pods.push_back(pod);
  } else {
    MKUBE_ASSIGN_OR_RETURN(auto list, s.Worded(s.res().List(pod_kind, ns, f.labels, f.fields)));
    pods = list.items;
  }
  if (pods.empty()) {
    if (ns.empty()) {
      std::cerr << "No resources found\n";
    } else {
      std::cerr << "No resources found in " << ns << " namespace.\n";
    }
    return absl::OkStatus();
  }
  const absl::Time now = absl::Now();
  for (const auto& p : pods) {
    const auto& meta = api::MetaOf(*p);
    auto created = api::ParseRfc3339(meta.creation_timestamp());
    if (created && now - *created > kMetricsCreationDelay) {
      return UserError(fmt::format("error: Metrics not available for pod {}/{}, age: {}",
                                   meta.namespace_(), meta.name(),
                                   absl::FormatDuration(now - *created)));
    }
  }
  return UserError("error: metrics not available yet");
}

}  // namespace

absl::Status TopPods(Session& s, const std::vector<std::string>& names, const TopFlags& f) {
  MKUBE_RETURN_IF_ERROR(CheckFlags(names, f));
  const std::string ns = f.all_namespaces ? "" : s.ns();
  MKUBE_ASSIGN_OR_RETURN(auto metrics,
                         Measured(s, *api::FindResource("pods.metrics.k8s.io"), ns, names, f));
  if (metrics.empty()) return NoPodMetrics(s, ns, names, f);
  std::vector<Row> rows;
  Figures total;
  for (const auto& m : metrics) {
    const auto& pm = static_cast<const api::PodMetrics&>(*m);
    const std::string& pod_ns = pm.metadata().namespace_();
    const std::string& pod = pm.metadata().name();
    std::vector<std::string> lead;
    if (f.all_namespaces) lead.push_back(pod_ns);
    Figures pod_sum;
    for (const auto& c : pm.containers()) pod_sum = Sum(c.usage(), pod_sum);
    total.cpu_milli += pod_sum.cpu_milli;
    total.memory_bytes += pod_sum.memory_bytes;
    if (!f.containers) {
      Row r{pod_ns + "/" + pod, pod_sum, lead};
      for (const auto& cell : {pod, Cpu(pod_sum), Memory(pod_sum)}) r.cells.push_back(cell);
      rows.push_back(std::move(r));
      continue;
    }
    for (const auto& c : pm.containers()) {
      Row r{pod_ns + "/" + pod + "/" + c.name(), Sum(c.usage()), lead};
      for (const auto& cell : {pod, c.name(), Cpu(r.figures), Memory(r.figures)}) {
        r.cells.push_back(cell);
      }
      rows.push_back(std::move(r));
    }
  }
  SortRows(rows, f.sort_by);
  api::Table t;
  if (f.all_namespaces) t.columns.push_back("NAMESPACE");
  if (f.containers) t.columns.push_back("POD");
  for (const char* c : {"NAME", "CPU(cores)", "MEMORY(bytes)"}) t.columns.push_back(c);
  for (auto& r : rows) t.rows.push_back(std::move(r.cells));
  if (f.sum) {
    std::vector<std::string> rule(t.columns.size(), ""), sums(t.columns.size(), "");
    rule[rule.size() - 2] = rule[rule.size() - 1] = "________";
    sums[sums.size() - 2] = Cpu(total);
    sums[sums.size() - 1] = Memory(total);
    t.rows.push_back(rule);
    t.rows.push_back(sums);
  }
  std::cout << api::RenderTable(t, !f.no_headers);
  return absl::OkStatus();
}

}  // namespace mkube::cli
