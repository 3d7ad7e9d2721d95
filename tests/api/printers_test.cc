#include "api/printers.h"

#include <gtest/gtest.h>

#include "api/codec.h"
#include "proto/api/apps.pb.h"

namespace mkube::api {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1800000000);  // 2027-01-15T08:00:00Z

std::string Ago(absl::Duration d) {
  return absl::FormatTime(absl::RFC3339_sec, kNow - d, absl::UTCTimeZone());
}

template <typename T>
T Parse(const std::string& yaml) {
  T obj;
  auto docs = ParseDocuments(yaml);
  EXPECT_TRUE(docs.ok()) << docs.status();
  auto st = DecodeNode((*docs)[0], &obj);
  EXPECT_TRUE(st.ok()) << st;
  return obj;
}

struct DurationCase {
  absl::Duration d;
  std::string want;
};

TEST(HumanDurationTest, AsKubectlPrintsIt) {
  const std::vector<DurationCase> cases = {
      {absl::Seconds(-5), "<invalid>"},
      {absl::Milliseconds(-500), "0s"},
      {absl::Seconds(0), "0s"},
      {absl::Seconds(45), "45s"},
      {absl::Seconds(119), "119s"},
      {absl::Seconds(120), "2m"},
      {absl::Seconds(182), "3m2s"},
      {absl::Minutes(10), "10m"},
      {absl::Minutes(179), "179m"},
      {absl::Hours(3), "3h"},
      {absl::Minutes(245), "4h5m"},
      {absl::Hours(8), "8h"},
      {absl::Hours(47), "47h"},
      {absl::Hours(51), "2d3h"},
      {absl::Hours(24 * 7), "7d"},
      {absl::Hours(24 * 400), "400d"},
      {absl::Hours(24 * (365 * 3 + 20)), "3y20d"},
      {absl::Hours(24 * 365 * 9), "9y"},
  };
  for (const auto& c : cases) EXPECT_EQ(HumanDuration(c.d), c.want) << absl::FormatDuration(c.d);
}

TEST(AgeTest, FromTimestamps) {
  EXPECT_EQ(Age(Ago(absl::Seconds(5)), kNow), "5s");
  EXPECT_EQ(Age("", kNow), "<unknown>");
  EXPECT_EQ(Age("yesterday", kNow), "<unknown>");
}

struct PodCase {
  std::string name;
  std::string status_yaml;  // the pod's status (and, when given, metadata)
  std::string want;
};

TEST(PodStatusReasonTest, AsKubectlShowsIt) {
  const std::vector<PodCase> cases = {
      {"no status yet", "", "Pending"},
      {"pending", "status: {phase: Pending}", "Pending"},
      {"creating",
       "status: {phase: Pending, containerStatuses: [{name: c, state: {waiting: {reason: "
       "ContainerCreating}}}]}",
       "ContainerCreating"},
      {"pull error",
       "status: {phase: Pending, containerStatuses: [{name: c, state: {waiting: {reason: "
       "ErrImagePull}}}]}",
       "ErrImagePull"},
      {"back-off",
       "status: {phase: Pending, containerStatuses: [{name: c, state: {waiting: {reason: "
       "ImagePullBackOff}}}]}",
       "ImagePullBackOff"},
      {"running",
       "status: {phase: Running, containerStatuses: [{name: c, ready: true, state: {running: "
       "{startedAt: '2027-01-15T07:00:00Z'}}}]}",
       "Running"},
      {"crash loop",
       "status: {phase: Running, containerStatuses: [{name: c, restartCount: 4, state: {waiting: "
       "{reason: CrashLoopBackOff}}}]}",
       "CrashLoopBackOff"},
      {"completed",
       "status: {phase: Succeeded, containerStatuses: [{name: c, state: {terminated: {exitCode: 0, "
       "reason: Completed}}}]}",
       "Completed"},
      {"error",
       "status: {phase: Failed, containerStatuses: [{name: c, state: {terminated: {exitCode: 1, "
       "reason: Error}}}]}",
       "Error"},
      {"exit code",
       "status: {phase: Failed, containerStatuses: [{name: c, state: {terminated: {exitCode: "
       "3}}}]}",
       "ExitCode:3"},
      {"signal",
       "status: {phase: Failed, containerStatuses: [{name: c, state: {terminated: {exitCode: 137, "
       "signal: 9}}}]}",
       "Signal:9"},
      {"one done one running",
       "status: {phase: Running, conditions: [{type: Ready, status: 'True'}], containerStatuses: "
       "[{name: a, ready: true, state: {running: {}}}, {name: b, state: {terminated: {reason: "
       "Completed}}}]}",
       "Running"},
      {"terminating",
       "metadata: {name: p, deletionTimestamp: '2027-01-15T07:59:00Z'}\nstatus: {phase: Running}",
       "Terminating"},
      {"node lost",
       "metadata: {name: p, deletionTimestamp: '2027-01-15T07:59:00Z'}\nstatus: {phase: Running, "
       "reason: NodeLost}",
       "Unknown"},
      {"node lost, not yet deleted, with its container still said to run",
       "status: {phase: Running, reason: NodeLost, containerStatuses: [{name: c, ready: true, "
       "state: {running: {}}}]}",
       "Unknown"},
      {"evicted", "status: {phase: Failed, reason: Evicted}", "Evicted"},
  };
  for (const auto& c : cases) {
    Pod pod = c.status_yaml.empty() ? Pod() : Parse<Pod>(c.status_yaml);
    EXPECT_EQ(PodStatusReason(pod), c.want) << c.name;
  }
}

TEST(NodeStatusTest, ReadyNotReadyCordoned) {
  EXPECT_EQ(NodeStatus(Node()), "Unknown");
  EXPECT_EQ(NodeStatus(Parse<Node>("status: {conditions: [{type: Ready, status: 'True'}]}")),
            "Ready");
  EXPECT_EQ(NodeStatus(Parse<Node>("status: {conditions: [{type: Ready, status: Unknown}]}")),
            "NotReady");
  EXPECT_EQ(
      NodeStatus(Parse<Node>(
          "spec: {unschedulable: true}\nstatus: {conditions: [{type: Ready, status: 'True'}]}")),
      "Ready,SchedulingDisabled");
  EXPECT_EQ(NodeRoles(Parse<Node>("metadata: {name: m, labels: {node-role.kubernetes.io/master: "
                                  "'', node-role.kubernetes.io/control-plane: ''}}")),
            "control-plane,master");
  EXPECT_EQ(NodeRoles(Node()), "<none>");
}

TEST(TableTest, PodsNarrowWideLabelsAndNamespaces) {
  Pod a = Parse<Pod>(
      "metadata: {name: nginx001, namespace: default, labels: {app: nginx, tier: web}, "
      "creationTimestamp: '" +
      Ago(absl::Seconds(182)) +
      "'}\n"
      "spec: {nodeName: node01, containers: [{name: c, image: nginx}]}\n"
      "status: {phase: Running, podIP: 10.244.1.5, containerStatuses: [{name: c, ready: true, "
      "restartCount: 2, "
      "state: {running: {}}, lastState: {terminated: {exitCode: 1, finishedAt: '" +
      Ago(absl::Seconds(30)) + "'}}}]}");
  Pod b = Parse<Pod>(
      "metadata: {name: pending-pod, namespace: kube-system, creationTimestamp: '" +
      Ago(absl::Hours(5)) +
      "'}\n"
      "spec: {containers: [{name: c, image: x}, {name: d, image: y}]}\nstatus: {phase: Pending}");
  const KindInfo& pods = *FindResource("pods");
  TableOptions o;
  o.now = kNow;
  EXPECT_EQ(RenderTable(MakeTable(pods, {&a, &b}, o)),
            "NAME          READY   STATUS    RESTARTS      AGE\n"
            "nginx001      1/1     Running   2 (30s ago)   3m2s\n"
            "pending-pod   0/2     Pending   0             5h\n");
  o.wide = true;
  EXPECT_EQ(RenderTable(MakeTable(pods, {&a, &b}, o)),
            "NAME          READY   STATUS    RESTARTS      AGE    IP           NODE     NOMINATED "
            "NODE   READINESS GATES\n"
            "nginx001      1/1     Running   2 (30s ago)   3m2s   10.244.1.5   node01   <none>     "
            "      <none>\n"
            "pending-pod   0/2     Pending   0             5h     <none>       <none>   <none>     "
            "      <none>\n");
  o.wide = false;
  o.show_labels = true;
  o.with_namespace = true;
  EXPECT_EQ(RenderTable(MakeTable(pods, {&a, &b}, o), /*headers=*/false),
            "default       nginx001      1/1   Running   2 (30s ago)   3m2s   app=nginx,tier=web\n"
            "kube-system   pending-pod   0/2   Pending   0             5h     <none>\n");
}

TEST(TableTest, RowsPrintedOneByOneLineUpUnderTheHeader) {
  Table head{{"NAME", "READY", "STATUS", "RESTARTS", "AGE"}, {}};
  std::vector<size_t> widths;
  EXPECT_EQ(RenderTable(head, true, &widths), "NAME   READY   STATUS   RESTARTS   AGE\n");
  Table row{head.columns, {{"nginx", "0/1", "Pending", "0", "0s"}}};
  EXPECT_EQ(RenderTable(row, false, &widths), "nginx   0/1     Pending   0          0s\n");
  Table wider{head.columns, {{"nginx", "0/1", "ContainerCreating", "0", "1s"}}};
  EXPECT_EQ(RenderTable(wider, false, &widths),
            "nginx   0/1     ContainerCreating   0          1s\n");
  EXPECT_EQ(RenderTable(row, false, &widths),
            "nginx   0/1     Pending             0          0s\n");
}

TEST(TableTest, WorkloadsNodesAndEvents) {
  TableOptions o;
  o.now = kNow;
  Deployment d =
      Parse<Deployment>("metadata: {name: myapp, creationTimestamp: '" + Ago(absl::Minutes(12)) +
                        "'}\n"
                        "spec: {replicas: 3, selector: {matchLabels: {app: myapp}}, template: "
                        "{spec: {containers: [{name: myapp, image: 'soscscs/myapp:v1'}]}}}\n"
                        "status: {readyReplicas: 2, updatedReplicas: 3, availableReplicas: 2}");
  o.wide = true;
  EXPECT_EQ(
      RenderTable(MakeTable(*FindResource("deploy"), {&d}, o)),
      "NAME    READY   UP-TO-DATE   AVAILABLE   AGE   CONTAINERS   IMAGES             SELECTOR\n"
      "myapp   2/3     3            2           12m   myapp        soscscs/myapp:v1   app=myapp\n");
  o.wide = false;
  Node n = Parse<Node>("metadata: {name: node01, creationTimestamp: '" + Ago(absl::Hours(51)) +
                       "'}\n"
                       "spec: {unschedulable: true}\n"
                       "status: {conditions: [{type: Ready, status: 'True'}], nodeInfo: "
                       "{kubeletVersion: v1.20.11}}");
  EXPECT_EQ(RenderTable(MakeTable(*FindResource("no"), {&n}, o)),
            "NAME     STATUS                     ROLES    AGE    VERSION\n"
            "node01   Ready,SchedulingDisabled   <none>   2d3h   v1.20.11\n");
  Event e = Parse<Event>(
      "metadata: {name: p.1}\ninvolvedObject: {kind: Pod, name: p}\n"
      "reason: FailedScheduling\ntype: Warning\nlastTimestamp: '" +
      Ago(absl::Seconds(7)) +
      "'\n"
      "message: '0/3 nodes are available: 3 node(s) didn''t match Pod''s node affinity/selector.'");
  EXPECT_EQ(RenderTable(MakeTable(*FindResource("ev"), {&e}, o)),
            "LAST SEEN   TYPE      REASON             OBJECT   MESSAGE\n"
            "7s          Warning   FailedScheduling   pod/p    0/3 nodes are available: 3 node(s) "
            "didn't match Pod's node affinity/selector.\n");
  Job j =
      Parse<Job>("metadata: {name: pi, creationTimestamp: '" + Ago(absl::Minutes(3)) +
                 "'}\n"
                 "spec: {completions: 2, template: {spec: {containers: [{name: c, image: x}]}}}\n"
                 "status: {succeeded: 1, startTime: '" +
                 Ago(absl::Seconds(100)) + "'}");
  EXPECT_EQ(RenderTable(MakeTable(*FindResource("jobs"), {&j}, o)),
            "NAME   COMPLETIONS   DURATION   AGE\n"
            "pi     1/2           100s       3m\n");
}

}  // namespace
}  // namespace mkube::api

namespace mkube::api {
namespace {

TEST(YamlOutputTest, AsKubectlWritesIt) {
  auto pod = Parse<Pod>(R"(
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {tier: front, app: web}, annotations: {note: "two\nlines", port: "80"}}
spec:
  containers:
  - name: c
    image: nginx
    args: ["--port", "8080"]
  tolerations:
  - {key: cht, operator: Exists, effect: NoExecute}
)");
  EXPECT_EQ(ToYaml(pod),
            "apiVersion: v1\n"
            "kind: Pod\n"
            "metadata:\n"
            "  annotations:\n"
            "    note: \"two\\nlines\"\n"
            "    port: \"80\"\n"
            "  labels:\n"
            "    app: web\n"
            "    tier: front\n"
            "  name: web\n"
            "spec:\n"
            "  containers:\n"
            "  - args:\n"
            "    - --port\n"
            "    - \"8080\"\n"
            "    image: nginx\n"
            "    name: c\n"
            "  tolerations:\n"
            "  - effect: NoExecute\n"
            "    key: cht\n"
            "    operator: Exists\n");
  // JSON as kubectl prints it: four spaces, fields in the object's order.
  EXPECT_EQ(ToJson(Parse<Namespace>("metadata: {name: x}\nstatus: {phase: Active}")),
            "{\n    \"metadata\": {\n        \"name\": \"x\"\n    },\n    \"status\": {\n        "
            "\"phase\": \"Active\"\n    }\n}");
}

}  // namespace
}  // namespace mkube::api
