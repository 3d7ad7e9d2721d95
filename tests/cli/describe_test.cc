#include "cli/describe.h"

#include <gtest/gtest.h>

#include "api/codec.h"

namespace mkube::cli {
namespace {

template <typename T>
T Parse(const std::string& yaml) {
  T obj;
  auto docs = api::ParseDocuments(yaml);
  EXPECT_TRUE(docs.ok()) << docs.status();
  EXPECT_TRUE(api::DecodeNode((*docs)[0], &obj).ok());
  return obj;
}

const absl::Time kNow = absl::FromUnixSeconds(1800000000);

TEST(DescribeTest, PodFieldsContainersAndEvents) {
  auto pod = Parse<api::Pod>(R"(
metadata: {name: web, namespace: default, labels: {app: web, tier: front},
           ownerReferences: [{kind: ReplicaSet, name: web-5d8, uid: u, controller: true}]}
spec:
  nodeName: node01
  nodeSelector: {disktype: ssd}
  containers:
  - name: nginx
    image: nginx:1.25
    ports: [{containerPort: 80}]
    resources: {requests: {cpu: 100m, memory: 64Mi}}
  tolerations:
  - {key: cht, operator: Equal, value: mycht, effect: NoExecute, tolerationSeconds: 3600}
status:
  phase: Running
  podIP: 10.1.0.5
  hostIP: 192.168.1.11
  conditions: [{type: Ready, status: 'True'}]
  containerStatuses:
  - name: nginx
    ready: true
    restartCount: 1
    state: {running: {startedAt: '2027-01-15T07:59:00Z'}}
    lastState: {terminated: {exitCode: 137, reason: OOMKilled}}
)");
  auto ev = Parse<api::Event>(R"(
involvedObject: {kind: Pod, name: web}
type: Normal
reason: Scheduled
source: {component: default-scheduler}
message: Successfully assigned default/web to node01
count: 1
lastTimestamp: '2027-01-15T07:58:00Z'
)");
  const std::string out = DescribePod(pod, {ev}, kNow);
  for (const char* want : {
           "Name:         web\n",
           "Node:         node01/192.168.1.11\n",
           "Labels:       app=web\n              tier=front\n",
           "Status:       Running\n",
           "IP:           10.1.0.5\n",
           "Controlled By:  ReplicaSet/web-5d8\n",
           "    Port:           80/TCP\n",
           "    State:          Running\n      Started:      ",
           "    Last State:     Terminated\n      Reason:       OOMKilled\n      Exit Code:    "
           "137\n",
           "    Restart Count:  1\n",
           "    Requests:       cpu:100m\n                    memory:64Mi\n",
           "Conditions:\n  Type   Status\n  ----   ------\n  Ready  True\n",
           "Node-Selectors:  disktype=ssd\n",
           "Tolerations:     cht=mycht:NoExecute for 3600s\n",
           "Events:\n  Type    Reason     Age  From               Message\n"
           "  ----    ------     ---  ----               -------\n"
           "  Normal  Scheduled  2m   default-scheduler  Successfully assigned default/web to "
           "node01\n",
       }) {
    EXPECT_NE(out.find(want), std::string::npos) << "missing:\n" << want << "\nin:\n" << out;
  }
}

TEST(DescribeTest, NodeTaintsAndAllocatedResources) {
  auto node = Parse<api::Node>(R"(
metadata: {name: master01, labels: {node-role.kubernetes.io/master: ''}}
spec:
  unschedulable: true
  taints: [{key: node-role.kubernetes.io/master, effect: NoSchedule}, {key: cht, value: a, effect: NoExecute}]
status:
  allocatable: {cpu: '2', memory: 4Gi}
  addresses: [{type: InternalIP, address: 192.168.1.10}]
)");
  auto pod = Parse<api::Pod>(R"(
metadata: {name: p, namespace: kube-system}
spec: {containers: [{name: c, image: x, resources: {requests: {cpu: 500m, memory: 1Gi}, limits: {cpu: '1'}}}]}
)");
  auto lease =
      Parse<api::Lease>("spec: {holderIdentity: master01, renewTime: '2027-01-15T07:59:50Z'}");
  const std::string out = DescribeNode(node, &lease, {pod}, {}, kNow);
  EXPECT_NE(
      out.find(
          "Lease:\n  HolderIdentity:  master01\n  AcquireTime:     <unset>\n  RenewTime:       "),
      std::string::npos)
      << out;
  EXPECT_NE(DescribeNode(node, nullptr, {}, {}, kNow)
                .find("Lease:              Failed to get lease: leases.coordination.k8s.io "
                      "\"master01\" not found\n"),
            std::string::npos);
  for (const char* want : {
           "Roles:              master\n",
           "Taints:             node-role.kubernetes.io/master:NoSchedule\n                    "
           "cht=a:NoExecute\n",
           "Unschedulable:      true\n",
           "  InternalIP:  192.168.1.10\n",
           "Non-terminated Pods:        (1 in total)\n",
           "  kube-system  p     500m (25%)    1 (50%)     1Gi (25%)        0 (0%)         "
           "<unknown>\n",
           "  cpu       500m (25%)  1 (50%)\n",
           "  memory    1Gi (25%)   0 (0%)\n",
           "Events:",
       }) {
    EXPECT_NE(out.find(want), std::string::npos) << "missing:\n" << want << "\nin:\n" << out;
  }
}

}  // namespace
}  // namespace mkube::cli
