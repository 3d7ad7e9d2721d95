// build/bin/mkubectl as a user runs it, against a real mkube-store and mkube-apiserver: the
// seeds' commands, kubectl's output, and one-line errors with a non-zero exit code.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "absl/strings/str_split.h"
#include "client/client.h"
#include "fmt/format.h"
#include "proto/api/apps.pb.h"
#include "tests/integration/mkubectl_fixture.h"
#include "tests/util/eventually.h"

namespace mkube::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;
using ::testing::StartsWith;

TEST_F(MkubectlTest, ApplyCreatesThenLeavesUnchangedThenConfigures) {
  auto r = Ctl({"apply", "-f", Seed("pod1.yaml"), "-f", Seed("myapp.yaml")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "pod/nginx001 created\ndeployment.apps/myapp created\n");
  r = Ctl({"apply", "-f", Seed("pod1.yaml"), "-f", Seed("myapp.yaml")});
  EXPECT_EQ(r.out, "pod/nginx001 unchanged\ndeployment.apps/myapp unchanged\n") << r.err;
  // From stdin, with one change: the replicas.
  std::string text = ReadFile(Seed("myapp.yaml"));
  text.replace(text.find("replicas: 3"), 11, "replicas: 5");
  r = Ctl({"apply", "-f", "-"}, text);
  EXPECT_EQ(r.out, "deployment.apps/myapp configured\n") << r.err;
  r = Ctl({"get", "deploy", "myapp", "-o", "jsonpath"});
  EXPECT_NE(r.exit_code, 0);
  r = Ctl({"get", "deployment", "myapp", "-o", "yaml"});
  EXPECT_THAT(r.out, HasSubstr("replicas: 5"));
  EXPECT_THAT(r.out, HasSubstr("kubectl.kubernetes.io/last-applied-configuration"));
  // create refuses what exists, naming the file.
  r = Ctl({"create", "-f", Seed("pod1.yaml")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "Error from server (AlreadyExists): error when creating \"" + Seed("pod1.yaml") +
                       "\": pods \"nginx001\" already exists\n");
  EXPECT_EQ(Ctl({"delete", "-f", Seed("pod1.yaml"), "-f", Seed("myapp.yaml")}).out,
            "pod \"nginx001\" deleted\ndeployment.apps \"myapp\" deleted\n");
}

TEST_F(MkubectlTest, ApplyServerSideTracksWhoManagesWhatAndRefusesConflicts) {
  auto r = Ctl({"apply", "--server-side", "-f", Seed("myapp.yaml")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "deployment.apps/myapp serverside-applied\n");
  // Scaling takes the replicas from the applier: applying them again is a conflict.
  ASSERT_EQ(Ctl({"scale", "deployment", "myapp", "--replicas=4"}).exit_code, 0);
  r = Ctl({"apply", "--server-side", "-f", Seed("myapp.yaml")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("Error from server (Conflict): Apply failed with 1 conflict: "
                               "conflict with \"mkubectl\""));
  EXPECT_THAT(r.err, HasSubstr(": .spec.replicas\n"));
  EXPECT_EQ(Ctl({"get", "deployment", "myapp", "-o", "jsonpath={.spec.replicas}"}).out, "4");
  r = Ctl({"apply", "--server-side", "--force-conflicts", "-f", Seed("myapp.yaml")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Ctl({"get", "deployment", "myapp", "-o", "jsonpath={.spec.replicas}"}).out, "3");
  // Who manages what is shown when asked for, as kubectl shows it.
  EXPECT_THAT(Ctl({"get", "deployment", "myapp", "-o", "yaml"}).out, Not(HasSubstr("managedFields")));
  r = Ctl({"get", "deployment", "myapp", "-o", "yaml", "--show-managed-fields"});
  EXPECT_THAT(r.out, HasSubstr("    manager: mkubectl\n    operation: Apply\n"));
  EXPECT_THAT(r.out, HasSubstr("f:replicas: {}"));
  EXPECT_EQ(Ctl({"delete", "-f", Seed("myapp.yaml")}).exit_code, 0);
}

TEST_F(MkubectlTest, ApplyAFolderOfManifests) {
  auto r = Ctl({"apply", "-f", MKUBE_SEED_DIR});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = Lines(r.out);
  EXPECT_EQ(lines.size(), 11u) << r.out;
  EXPECT_EQ(lines[0], "pod/myapp01 created");  // demo01.yaml, files in name order
  EXPECT_THAT(r.out, HasSubstr("deployment.apps/myapp created\ndeployment.apps/myapp1 created\n"));
  EXPECT_THAT(r.out, HasSubstr("pod/affinity created\npod/affinity configured\n"))
      << "pod2 and pod3 share a name";
  r = Ctl({"delete", "-f", MKUBE_SEED_DIR, "--ignore-not-found"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Ctl({"get", "all"}).err, "No resources found in default namespace.\n");
}

TEST_F(MkubectlTest, GetPrintsKubectlTablesAndFormats) {
  ASSERT_EQ(Ctl({"apply", "-f", Seed("pod2.yaml"), "-f", Seed("demo01.yaml")}).exit_code, 0);
  auto r = Ctl({"get", "pods"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  EXPECT_THAT(lines[0], MatchesRegex("NAME +READY +STATUS +RESTARTS +AGE"));
  EXPECT_THAT(lines[1], MatchesRegex("affinity +0/1 +Pending +0 +[0-9]+s"));
  EXPECT_THAT(lines[2], MatchesRegex("myapp01 +0/1 +Pending +0 +[0-9]+s"));

  r = Ctl({"get", "po", "myapp01", "-o", "wide"});
  EXPECT_THAT(Lines(r.out)[0],
              MatchesRegex(
                  "NAME +READY +STATUS +RESTARTS +AGE +IP +NODE +NOMINATED NODE +READINESS GATES"));
  EXPECT_THAT(Lines(r.out)[1],
              MatchesRegex("myapp01 +0/1 +Pending +0 +[0-9]+s +<none> +<none> +<none> +<none>"));

  r = Ctl({"get", "pods", "--show-labels", "-l", "app=myapp01"});
  ASSERT_EQ(Lines(r.out).size(), 2u) << r.out;
  EXPECT_THAT(Lines(r.out)[1], MatchesRegex("myapp01 .* app=myapp01"));
  r = Ctl({"get", "pods", "-l", "app in (nobody)"});
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "No resources found in default namespace.\n");
  r = Ctl({"get", "pods", "--field-selector", "metadata.name=myapp01", "-o", "name"});
  EXPECT_EQ(r.out, "pod/myapp01\n");

  r = Ctl({"get", "pod", "myapp01", "-o", "json"});
  EXPECT_THAT(r.out, StartsWith("{\n    \"apiVersion\": \"v1\",\n    \"kind\": \"Pod\""));
  r = Ctl({"get", "pods", "-o", "yaml"});
  EXPECT_THAT(r.out, StartsWith("apiVersion: v1\nitems:\n"));
  EXPECT_THAT(r.out, HasSubstr("kind: List"));

  r = Ctl({"get", "pods", "-A"});
  EXPECT_THAT(Lines(r.out)[0], StartsWith("NAMESPACE "));
  r = Ctl({"get", "namespaces"});
  EXPECT_THAT(r.out, HasSubstr("kube-system       Active"));
  r = Ctl({"get", "all"});
  EXPECT_THAT(r.out, HasSubstr("pod/myapp01"));

  r = Ctl({"get", "pod", "nope"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "Error from server (NotFound): pods \"nope\" not found\n");
  EXPECT_EQ(Ctl({"delete", "pod", "--all"}).exit_code, 0);
  EXPECT_EQ(Ctl({"get", "pods"}).err, "No resources found in default namespace.\n");
}

TEST_F(MkubectlTest, LabelsTaintsAndCordonOnNodes) {
  ASSERT_EQ(Ctl({"apply", "-f", "-"}, kNodes).out, "node/node01 created\nnode/node02 created\n");
  EXPECT_EQ(Ctl({"label", "nodes", "node01", "disktype=ssd"}).out, "node/node01 labeled\n");
  auto r = Ctl({"label", "nodes", "node01", "disktype=hdd"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "error: 'disktype' already has a value (ssd), and --overwrite is false\n");
  EXPECT_EQ(Ctl({"label", "nodes", "node01", "disktype=hdd", "--overwrite"}).out,
            "node/node01 labeled\n");
  EXPECT_THAT(Ctl({"get", "nodes", "-l", "disktype=hdd", "-o", "name"}).out, "node/node01\n");
  EXPECT_EQ(Ctl({"label", "nodes", "node01", "disktype-"}).out, "node/node01 unlabeled\n");
  EXPECT_EQ(Ctl({"get", "nodes", "-l", "disktype"}).err, "No resources found\n");
  EXPECT_EQ(Ctl({"annotate", "node", "node01", "owner=ops"}).out, "node/node01 annotated\n");

  EXPECT_EQ(Ctl({"taint", "nodes", "node01", "cht=mycht:NoExecute"}).out, "node/node01 tainted\n");
  r = Ctl({"taint", "nodes", "node01", "cht=other:NoExecute"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err,
              HasSubstr("already has cht taint(s) with same effect(s) and --overwrite is false"));
  r = Ctl({"get", "node", "node01", "-o", "yaml"});
  EXPECT_THAT(r.out, HasSubstr("- effect: NoExecute\n    key: cht\n    value: mycht"));
  EXPECT_EQ(Ctl({"taint", "nodes", "node01", "cht:NoExecute-"}).out, "node/node01 untainted\n");
  r = Ctl({"taint", "nodes", "node01", "cht=x:Sometimes"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "error: invalid taint spec: cht=x:Sometimes, unsupported taint effect \"Sometimes\"\n");
  r = Ctl({"taint", "nodes", "node01", "cht-"});
  EXPECT_EQ(r.err, "error: taint \"cht\" not found\n");

  EXPECT_EQ(Ctl({"cordon", "node02"}).out, "node/node02 cordoned\n");
  EXPECT_EQ(Ctl({"cordon", "node02"}).out, "node/node02 already cordoned\n");
  r = Ctl({"get", "nodes"});
  EXPECT_THAT(
      r.out, MatchesRegex("(.|\n)*node02 +Unknown,SchedulingDisabled +<none> +[0-9]+s +\n(.|\n)*"));
  EXPECT_EQ(Ctl({"uncordon", "node02"}).out, "node/node02 uncordoned\n");
  EXPECT_EQ(Ctl({"delete", "nodes", "node01", "node02"}).out,
            "node \"node01\" deleted\nnode \"node02\" deleted\n");
}

TEST_F(MkubectlTest, ScaleADeployment) {
  ASSERT_EQ(Ctl({"apply", "-f", Seed("myapp1.yaml")}).exit_code, 0);
  auto r = Ctl({"scale", "deployment", "myapp1", "--replicas=2"});
  EXPECT_EQ(r.out, "deployment.apps/myapp1 scaled\n") << r.err;
  EXPECT_THAT(Ctl({"get", "deploy/myapp1", "-o", "yaml"}).out, HasSubstr("replicas: 2"));
  r = Ctl({"get", "deploy"});
  EXPECT_THAT(Lines(r.out)[0], MatchesRegex("NAME +READY +UP-TO-DATE +AVAILABLE +AGE"));
  EXPECT_THAT(Lines(r.out)[1], MatchesRegex("myapp1 +0/2 +0 +0 +[0-9]+s"));
  EXPECT_EQ(Ctl({"delete", "deployment", "myapp1"}).exit_code, 0);
}

TEST_F(MkubectlTest, ClearOneLineErrors) {
  struct Case {
    std::string name;
    std::vector<std::string> args;
    std::string stdin_text, config, want_err;
  };
  const std::string bad_yaml =
      Write("bad.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: [x\n");
  const std::string unknown_kind =
      Write("kind.yaml", "apiVersion: v1\nkind: Gadget\nmetadata: {name: x}\n");
  const std::string unknown_field = Write(
      "field.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containerz: []}\n");
  const std::vector<Case> cases = {
      {"missing file",
       {"apply", "-f", "/nonexistent/pod.yaml"},
       "",
       "config",
       "error: the path \"/nonexistent/pod.yaml\" does not exist\n"},
      {"invalid yaml",
       {"apply", "-f", bad_yaml},
       "",
       "config",
       "error: error validating \"" + bad_yaml + "\": "},
      {"unknown kind",
       {"apply", "-f", unknown_kind},
       "",
       "config",
       "error: error validating \"" + unknown_kind + "\": "},
      {"unknown field",
       {"create", "-f", unknown_field},
       "",
       "config",
       "error: error validating \"" + unknown_field + "\": "},
      {"unknown resource",
       {"get", "gadgets"},
       "",
       "config",
       "error: the server doesn't have a resource type \"gadgets\"\n"},
      {"wrong token",
       {"get", "pods"},
       "",
       "wrong-token",
       "error: You must be logged in to the server (Unauthorized)\n"},
      {"bad output",
       {"get", "pods", "-o", "table"},
       "",
       "config",
       "error: unable to match a printer suitable for the output format \"table\""},
  };
  for (const auto& c : cases) {
    auto r = Ctl(c.args, c.stdin_text, c.config);
    EXPECT_EQ(r.exit_code, 1) << c.name;
    EXPECT_THAT(r.err, StartsWith(c.want_err)) << c.name;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.name << ": " << r.err;
  }
  // The unknown field is named.
  EXPECT_THAT(Ctl({"create", "-f", unknown_field}).err, HasSubstr("containerz"));
  EXPECT_THAT(Ctl({"apply", "-f", unknown_kind}).err, HasSubstr("Gadget"));
  // An unreachable server.
  auto r = RunCommand({BinDir() + "/mkubectl", "--server", "http://127.0.0.1:1", "--token", "t",
                       "--request-timeout", "3s", "get", "pods"},
                      {{"MKUBECONFIG", dir().Sub("none")}});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, StartsWith("The connection to the server 127.0.0.1:1 was refused - did you "
                                "specify the right host or port?"));
  // No kubeconfig at all.
  r = RunCommand({BinDir() + "/mkubectl", "get", "pods"}, {{"MKUBECONFIG", dir().Sub("none")}});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, StartsWith("error: no configuration at " + dir().Sub("none")));
}

TEST_F(MkubectlTest, WatchPrintsRowsAsPodsChange) {
  Subprocess watch(
      {BinDir() + "/mkubectl", "--kubeconfig", dir().Sub("config"), "get", "pods", "-w"},
      dir().Sub("watch.out"));
  ASSERT_TRUE(Ctl({"apply", "-f", Seed("pod3.yaml")}).exit_code == 0);
  EXPECT_TRUE(Eventually(
      [] { return ReadFile(dir().Sub("watch.out")).find("affinity ") != std::string::npos; },
      std::chrono::seconds(6)))
      << ReadFile(dir().Sub("watch.out"));
  watch.Kill();
  Ctl({"delete", "-f", Seed("pod3.yaml")});
}

TEST_F(MkubectlTest, DescribeShowsTaintsTolerationsAndEvents) {
  ASSERT_EQ(Ctl({"apply", "-f", "-"}, kNodes).exit_code, 0);
  ASSERT_EQ(Ctl({"taint", "node", "node01", "cht=mycht:NoExecute"}).exit_code, 0);
  ASSERT_EQ(Ctl({"apply", "-f", Seed("demo01.yaml")}).exit_code, 0);
  // What the scheduler will record when nothing fits.
  ASSERT_EQ(Ctl({"apply", "-f", "-"}, R"(apiVersion: v1
kind: Event
metadata: {name: myapp01.1}
involvedObject: {kind: Pod, name: myapp01, namespace: default}
reason: FailedScheduling
type: Warning
count: 1
source: {component: default-scheduler}
message: "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."
)")
                .exit_code,
            0);
  auto r = Ctl({"describe", "pod", "myapp01"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("Name:         myapp01\nNamespace:    default\n"));
  EXPECT_THAT(
      r.out,
      HasSubstr("Tolerations:     cht=mycht:NoExecute for 3600s\n"
                "                 node.kubernetes.io/not-ready:NoExecute op=Exists for 300s\n"));
  EXPECT_THAT(r.out, HasSubstr("    State:          Waiting\n    Ready:          False\n"));
  EXPECT_THAT(
      r.out, MatchesRegex("(.|\n)*Events:\n"
                          "  Type +Reason +Age +From +Message\n"
                          "  ---- +------ +--- +---- +-------\n"
                          "  Warning +FailedScheduling +[0-9]+s +default-scheduler +0/2 nodes are "
                          "available: 2 node\\(s\\) didn't match Pod's node affinity/selector.\n"));
  // The seed's "describe nodes | grep -B 3 Taints".
  r = Ctl({"describe", "nodes"});
  EXPECT_THAT(r.out,
              HasSubstr("Taints:             cht=mycht:NoExecute\nUnschedulable:      false\n"));
  EXPECT_THAT(r.out, HasSubstr("Taints:             <none>\n"));
  EXPECT_THAT(r.out, HasSubstr("Allocated resources:\n"));
  r = Ctl({"describe", "node", "nope"});
  EXPECT_EQ(r.err, "Error from server (NotFound): nodes \"nope\" not found\n");
  Ctl({"delete", "-f", Seed("demo01.yaml")});
  Ctl({"delete", "event", "myapp01.1"});
  Ctl({"delete", "nodes", "node01", "node02"});
}

TEST_F(MkubectlTest, DrainCordonsThenEvictsWhatItMay) {
  ASSERT_EQ(Ctl({"apply", "-f", "-"}, kNodes).exit_code, 0);
  ASSERT_EQ(Ctl({"apply", "-f", "-"}, R"(apiVersion: v1
kind: Pod
metadata: {name: lonely}
spec: {nodeName: node01, containers: [{name: c, image: soscscs/myapp:v1}]}
---
apiVersion: v1
kind: Pod
metadata:
  name: ds-pod
  ownerReferences: [{apiVersion: apps/v1, kind: DaemonSet, name: ds, uid: "1234", controller: true}]
spec: {nodeName: node01, containers: [{name: c, image: soscscs/myapp:v1}]}
---
apiVersion: v1
kind: Pod
metadata: {name: elsewhere}
spec: {nodeName: node02, containers: [{name: c, image: soscscs/myapp:v1}]}
)")
                .exit_code,
            0);
  auto r = Ctl({"drain", "node01"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "node/node01 cordoned\n");
  EXPECT_THAT(r.err, HasSubstr("cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to "
                               "ignore): default/ds-pod"));
  EXPECT_THAT(
      r.err,
      HasSubstr(
          "cannot delete Pods declare no controller (use --force to override): default/lonely"));
  EXPECT_THAT(Ctl({"get", "pods", "-o", "name"}).out, HasSubstr("pod/lonely")) << "nothing evicted";
  // The seed's command (no agent runs here: a grace period of 0 removes the pods at once).
  r = Ctl({"drain", "node01", "--ignore-daemonsets", "--delete-local-data", "--force",
           "--grace-period", "0"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "node/node01 already cordoned\nevicting pod default/lonely\npod/lonely "
            "evicted\nnode/node01 drained\n");
  EXPECT_THAT(r.err, HasSubstr("Warning: ignoring DaemonSet-managed Pods: default/ds-pod"));
  EXPECT_EQ(Ctl({"get", "pods", "-o", "name"}).out, "pod/ds-pod\npod/elsewhere\n");
  EXPECT_THAT(Ctl({"get", "node", "node01"}).out, HasSubstr("SchedulingDisabled"));
  r = Ctl({"delete", "pods", "--all", "--force"});
  EXPECT_EQ(r.out, "pod \"ds-pod\" force deleted\npod \"elsewhere\" force deleted\n");
  EXPECT_THAT(r.err, StartsWith("Warning: Immediate deletion does not wait for confirmation"));
  Ctl({"delete", "nodes", "node01", "node02"});
}

TEST_F(MkubectlTest, RolloutStatusAndSetImage) {
  ASSERT_EQ(Ctl({"apply", "-f", Seed("myapp1.yaml")}).exit_code, 0);
  EXPECT_EQ(Ctl({"set", "image", "deployment/myapp1", "myapp1=soscscs/myapp:v2"}).out,
            "deployment.apps/myapp1 image updated\n");
  EXPECT_THAT(Ctl({"get", "deploy", "myapp1", "-o", "yaml"}).out,
              HasSubstr("image: soscscs/myapp:v2"));
  auto r = Ctl({"set", "image", "deployment/myapp1", "nope=x"});
  EXPECT_EQ(r.err, "error: unable to find container named \"nope\"\n");
  // No controller runs here: the status says so until someone (here: the test) reports progress.
  r = Ctl({"rollout", "status", "deployment/myapp1", "--timeout", "1s"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.out, StartsWith("Waiting for deployment"));
  EXPECT_EQ(r.err, "error: timed out waiting for the condition\n");
  client::ApiClient& admin = *cluster_->client();
  auto d = admin.Get<api::Deployment>("deployments", "default", "myapp1");
  ASSERT_TRUE(d.ok());
  const std::string status = fmt::format(
      R"({{"status":{{"observedGeneration":{},"replicas":3,"updatedReplicas":3,"readyReplicas":3,"availableReplicas":3}}}})",
      d->metadata().generation());
  ASSERT_TRUE(
      admin.Patch<api::Deployment>("deployments", "default", "myapp1", status, "status").ok());
  r = Ctl({"rollout", "status", "deployment/myapp1", "--timeout", "10s"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "deployment \"myapp1\" successfully rolled out\n");
  r = Ctl({"describe", "deployment", "myapp1"});
  EXPECT_THAT(r.out, HasSubstr("Replicas:               3 desired | 3 updated | 3 total | 3 "
                               "available | 0 unavailable\n"));
  EXPECT_THAT(r.out, HasSubstr("StrategyType:           RollingUpdate\n"));
  Ctl({"delete", "deployment", "myapp1"});
}

TEST_F(MkubectlTest, RolloutHistoryAndUndoFromTheReplicaSets) {
  ASSERT_EQ(Ctl({"apply", "-f", Seed("myapp1.yaml")}).exit_code, 0);
  EXPECT_EQ(Ctl({"rollout", "undo", "deployment/myapp1"}).err,
            "error: no rollout history found for deployment \"myapp1\"\n");
  const std::string uid = [&] {
    std::string y = Ctl({"get", "deploy", "myapp1", "-o", "yaml"}).out;
    auto at = y.find("uid: ") + 5;
    return y.substr(at, y.find('\n', at) - at);
  }();
  // What the deployment controller leaves behind after two rollouts (v1, then v2).
  auto rs = [&](int rev, const std::string& image, const std::string& cause) {
    return fmt::format(R"(apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: myapp1-{0}
  annotations: {{deployment.kubernetes.io/revision: "{0}"{3}}}
  ownerReferences: [{{apiVersion: apps/v1, kind: Deployment, name: myapp1, uid: {1}, controller: true}}]
spec:
  replicas: 0
  selector: {{matchLabels: {{app: myapp1, pod-template-hash: h{0}}}}}
  template:
    metadata: {{labels: {{app: myapp1, pod-template-hash: h{0}}}}}
    spec:
      nodeSelector: {{kgc: a}}
      containers: [{{name: myapp1, image: "{2}", ports: [{{containerPort: 80}}]}}]
)",
                       rev, uid, image,
                       cause.empty() ? "" : ", kubernetes.io/change-cause: \"" + cause + "\"");
  };
  ASSERT_EQ(Ctl({"apply", "-f", "-"},
                rs(1, "soscscs/myapp:v1", "") + "---\n" + rs(2, "soscscs/myapp:v2", "set image v2"))
                .exit_code,
            0);
  ASSERT_EQ(Ctl({"set", "image", "deploy/myapp1", "myapp1=soscscs/myapp:v2"}).exit_code, 0);
  ASSERT_EQ(Ctl({"annotate", "deploy", "myapp1", "deployment.kubernetes.io/revision=2"}).exit_code,
            0);
  auto r = Ctl({"rollout", "history", "deployment/myapp1"});
  EXPECT_EQ(r.out,
            "deployment.apps/myapp1 \nREVISION   CHANGE-CAUSE\n1          <none>\n2          set "
            "image v2\n\n")
      << r.err;
  EXPECT_EQ(Ctl({"rollout", "undo", "deployment/myapp1", "--to-revision=7"}).err,
            "error: unable to find specified revision 7 in history\n");
  r = Ctl({"rollout", "undo", "deployment/myapp1"});
  EXPECT_EQ(r.out, "deployment.apps/myapp1 rolled back\n") << r.err;
  EXPECT_THAT(Ctl({"get", "deploy", "myapp1", "-o", "yaml"}).out,
              HasSubstr("image: soscscs/myapp:v1"));
  EXPECT_EQ(
      Ctl({"rollout", "undo", "deployment/myapp1", "--to-revision=1"}).out,
      "deployment.apps/myapp1 skipped rollback (current template already matches revision 1)\n");
  Ctl({"delete", "deploy", "myapp1"});
  Ctl({"delete", "rs", "myapp1-1", "myapp1-2"});
}

TEST_F(MkubectlTest, InformationCommands) {
  auto r = Ctl({"api-resources"});
  EXPECT_THAT(Lines(r.out)[0], MatchesRegex("NAME +SHORTNAMES +APIVERSION +NAMESPACED +KIND"));
  EXPECT_THAT(r.out,
              MatchesRegex("(.|\n)*\ndeployments +deploy +apps/v1 +true +Deployment\n(.|\n)*"));
  EXPECT_THAT(Ctl({"version"}).out, MatchesRegex("Client Version: v.*\nServer Version: v.*\n"));
  EXPECT_THAT(Ctl({"cluster-info"}).out,
              StartsWith("Kubernetes control plane is running at http://" +
                         cluster_->apiserver().address()));
  r = Ctl({"explain", "pod.spec.affinity.nodeAffinity"});
  EXPECT_EQ(r.out,
            "KIND:     Pod\nVERSION:  v1\n\nRESOURCE: nodeAffinity <Object>\n\nFIELDS:\n"
            "   preferredDuringSchedulingIgnoredDuringExecution\t<[]Object>\n"
            "   requiredDuringSchedulingIgnoredDuringExecution\t<Object>\n");
  EXPECT_EQ(Ctl({"explain", "deploy.spec.replicas"}).out,
            "KIND:     Deployment\nVERSION:  apps/v1\n\nFIELD:    replicas <integer>\n");
  // The seed's misspelt path.
  r = Ctl({"explain", "pod.spec.aff1n1ty.nodeAffin1ty"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: field \"aff1n1ty\" does not exist\n");
  // Bash completion: commands, types, names from the server, output formats.
  const std::string script = Ctl({"completion", "bash"}).out;
  auto complete = [&](const std::string& words, int cword) {
    return RunCommand({"bash", "-c",
                       "source /dev/stdin; COMP_WORDS=(" + words + "); COMP_CWORD=" +
                           std::to_string(cword) + "; _mkubectl; echo \"${COMPREPLY[*]}\""},
                      {{"MKUBECONFIG", dir().Sub("config")}, {"PATH", BinDir() + ":/usr/bin:/bin"}},
                      script)
        .out;
  };
  EXPECT_EQ(complete("mkubectl cord", 1), "cordon\n");
  EXPECT_EQ(complete("mkubectl get deploy", 2), "deploy deployment deployments\n");
  EXPECT_EQ(complete("mkubectl get pods -o ya", 4), "yaml\n");
  EXPECT_EQ(complete("mkubectl describe namespace kube-s", 3), "kube-system\n");
  r = Ctl({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("apply"));
}

}  // namespace
}  // namespace mkube::testing
