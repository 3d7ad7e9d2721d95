#pragma once

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "api/kinds.h"
#include "google/protobuf/message.h"
#include "proto/api/core.pb.h"

namespace mkube::api {

// The kubectl-style tables of each kind: column names and row cells, as `kubectl get` prints
// them. Today mkubectl alone uses them (get; the tables of top, rollout history, config
// get-contexts and api-resources; describe's ages and roles). They live in api/, not in the
// CLI, so that a server can render the same tables: kubectl asks for them as Table objects.
struct TableOptions {
  bool wide = false;             // -o wide: the extra columns
  bool show_labels = false;      // --show-labels: a LABELS column last
  bool with_namespace = false;   // -A: a NAMESPACE column first
  absl::Time now = absl::Now();  // ages are measured to this
};

struct Table {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
};

// The table of objects of one kind (kinds without columns of their own get NAME, AGE).
Table MakeTable(const KindInfo& kind, const std::vector<const google::protobuf::Message*>& objects,
                const TableOptions& options);
// Aligned as kubectl aligns: each column as wide as its widest cell plus three spaces.
// With `widths`, columns are at least as wide as given there, and it is widened to match:
// rows printed one by one (get -w) keep lining up under the header printed first.
std::string RenderTable(const Table& table, bool headers = true,
                        std::vector<size_t>* widths = nullptr);

// kubectl's short durations: "45s", "3m2s", "12m", "4h5m", "2d3h", "400d", "3y20d".
std::string HumanDuration(absl::Duration d);
// The age of an RFC 3339 timestamp at `now`; "<unknown>" when there is none.
std::string Age(const std::string& rfc3339, absl::Time now);
// What kubectl shows in a pod's STATUS column: the phase, or the reason a container gives
// (ContainerCreating, ErrImagePull, CrashLoopBackOff, Completed, Error, ...), or Terminating.
std::string PodStatusReason(const Pod& pod);
// A node's STATUS column: Ready / NotReady / Unknown, with ",SchedulingDisabled" when cordoned.
std::string NodeStatus(const Node& node);
// A node's ROLES column, from its node-role.kubernetes.io/<role> labels; "<none>" without.
std::string NodeRoles(const Node& node);
// "k=v,k2=v2" sorted by key; "<none>" when empty.
std::string LabelsString(const google::protobuf::Map<std::string, std::string>& labels);

}  // namespace mkube::api
