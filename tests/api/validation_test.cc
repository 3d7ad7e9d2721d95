#include "api/validation.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "api/codec.h"
#include "api/defaults.h"
#include "api/strategy.h"
#include "proto/api/apps.pb.h"
#include "proto/api/core.pb.h"

namespace mkube::api {
namespace {

Object Decode(const std::string& text) {
  auto objs = DecodeManifests(text);
  EXPECT_TRUE(objs.ok()) << objs.status();
  return std::move((*objs)[0]);
}

std::string ReadText(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Validation, SeedManifestsAreValidOnceDefaulted) {
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(MKUBE_TEST_DATA) / "seed")) {
    Object obj = Decode(ReadText(entry.path()));
    Default(obj);
    EXPECT_TRUE(Validate(obj).ok()) << entry.path().filename() << ": " << Validate(obj);
    // Defaulting twice changes nothing.
    const std::string once = ToJson(*obj.message);
    Default(obj);
    EXPECT_EQ(ToJson(*obj.message), once) << entry.path().filename();
  }
}

TEST(Defaults, WhatKubernetesFillsIn) {
  Object pod = Decode("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n"
                      "  - name: c\n    image: soscscs/myapp:v1\n    ports:\n    - containerPort: 80\n");
  Default(pod);
  const auto& p = static_cast<const Pod&>(*pod.message);
  EXPECT_EQ(p.metadata().namespace_(), "default");
  EXPECT_EQ(p.spec().restart_policy(), "Always");
  EXPECT_EQ(p.spec().termination_grace_period_seconds(), 30);
  EXPECT_EQ(p.spec().containers(0).image_pull_policy(), "IfNotPresent");
  EXPECT_EQ(p.spec().containers(0).ports(0).protocol(), "TCP");
  EXPECT_EQ(p.spec().tolerations_size(), 0) << "tolerations are the apiserver's admission's";
  AddDefaultTolerations(static_cast<Pod*>(pod.message.get()), 300, 300);
  ASSERT_EQ(p.spec().tolerations_size(), 2);
  EXPECT_EQ(p.spec().tolerations(0).key(), "node.kubernetes.io/not-ready");
  EXPECT_EQ(p.spec().tolerations(1).key(), "node.kubernetes.io/unreachable");
  EXPECT_EQ(p.spec().tolerations(1).effect(), "NoExecute");
  EXPECT_EQ(p.spec().tolerations(1).toleration_seconds(), 300);

  // A pod tolerating everything gets no extra tolerations.
  Object all = Decode("apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n"
                      "  - name: c\n    image: busybox\n  tolerations:\n  - operator: Exists\n");
  Default(all);
  AddDefaultTolerations(static_cast<Pod*>(all.message.get()), 300, 300);
  EXPECT_EQ(static_cast<const Pod&>(*all.message).spec().tolerations_size(), 1);
  EXPECT_EQ(static_cast<const Pod&>(*all.message).spec().containers(0).image_pull_policy(),
            "Always");

  Object legacy = Decode(ReadText(std::filesystem::path(MKUBE_TEST_DATA) / "seed/myapp1.yaml"));
  Default(legacy);
  const auto& d = static_cast<const Deployment&>(*legacy.message);
  EXPECT_EQ(d.spec().selector().match_labels().at("app"), "myapp1");
  EXPECT_EQ(d.spec().strategy().type(), "RollingUpdate");
  EXPECT_EQ(d.spec().strategy().rolling_update().max_surge().string_value(), "25%");
  EXPECT_EQ(d.spec().template_().spec().tolerations_size(), 0) << "pods get them when created";
  EXPECT_TRUE(Validate(legacy).ok()) << Validate(legacy);

  // apps/v1 has no such default: the selector is required.
  Object current = Decode(
      "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  template:\n"
      "    metadata:\n      labels:\n        app: x\n    spec:\n      containers:\n"
      "      - name: c\n        image: nginx\n");
  Default(current);
  EXPECT_EQ(Validate(current).message(), "Deployment \"d\" is invalid: spec.selector: Required value");
}

TEST(Validation, ErrorsNameTheFieldsAsKubernetesDoes) {
  const std::string pod_head = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n";
  struct Case {
    const char* name;
    std::string text;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"image is required", pod_head + "  containers:\n  - name: c\n",
       "Pod \"p\" is invalid: spec.containers[0].image: Required value"},
      {"containers are required", pod_head + "  restartPolicy: Always\n",
       "spec.containers: Required value"},
      {"names are DNS-1123",
       "apiVersion: v1\nkind: Pod\nmetadata:\n  name: Bad_Name\nspec:\n  containers:\n"
       "  - name: c\n    image: x\n",
       "metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"},
      {"restart policy", pod_head + "  restartPolicy: Sometimes\n  containers:\n  - name: c\n    image: x\n",
       "spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", "
       "\"OnFailure\", \"Never\""},
      {"duplicate container names",
       pod_head + "  containers:\n  - name: c\n    image: x\n  - name: c\n    image: y\n",
       "spec.containers[1].name: Duplicate value: \"c\""},
      {"bad quantity",
       pod_head + "  containers:\n  - name: c\n    image: x\n    resources:\n      limits:\n"
                  "        cpu: lots\n",
       "spec.containers[0].resources.limits[cpu]: Invalid value: \"lots\": quantities must match"},
      {"requests above limits",
       pod_head + "  containers:\n  - name: c\n    image: x\n    resources:\n      requests:\n"
                  "        memory: 1Gi\n      limits:\n        memory: 128Mi\n",
       "must be less than or equal to memory limit of 128Mi"},
      {"toleration seconds need NoExecute",
       pod_head + "  containers:\n  - name: c\n    image: x\n  tolerations:\n  - key: k\n"
                  "    operator: Exists\n    effect: NoSchedule\n    tolerationSeconds: 5\n",
       "spec.tolerations[0].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' "
       "when `tolerationSeconds` is set"},
      {"toleration operator",
       pod_head + "  containers:\n  - name: c\n    image: x\n  tolerations:\n  - key: k\n"
                  "    operator: Maybe\n",
       "spec.tolerations[0].operator: Unsupported value: \"Maybe\""},
      {"node affinity operator",
       pod_head + "  containers:\n  - name: c\n    image: x\n  affinity:\n    nodeAffinity:\n"
                  "      requiredDuringSchedulingIgnoredDuringExecution:\n"
                  "        nodeSelectorTerms:\n        - matchExpressions:\n"
                  "          - key: kubernetes.io/hostname\n            operator: Near\n",
       "\"Near\" is not a valid selector operator"},
      {"Gt wants an integer",
       pod_head + "  containers:\n  - name: c\n    image: x\n  affinity:\n    nodeAffinity:\n"
                  "      requiredDuringSchedulingIgnoredDuringExecution:\n"
                  "        nodeSelectorTerms:\n        - matchExpressions:\n"
                  "          - key: cpus\n            operator: Gt\n            values: [many]\n",
       "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"},
      {"bad overhead",
       pod_head + "  overhead:\n    cpu: lots\n  containers:\n  - name: c\n    image: x\n",
       "spec.overhead[cpu]: Invalid value: \"lots\": quantities must match"},
      {"spread needs a positive maxSkew",
       pod_head + "  containers:\n  - name: c\n    image: x\n  topologySpreadConstraints:\n"
                  "  - maxSkew: 0\n    topologyKey: zone\n    whenUnsatisfiable: DoNotSchedule\n",
       "spec.topologySpreadConstraints[0].maxSkew: Invalid value: \"0\": must be greater than "
       "zero"},
      {"spread whenUnsatisfiable",
       pod_head + "  containers:\n  - name: c\n    image: x\n  topologySpreadConstraints:\n"
                  "  - maxSkew: 1\n    topologyKey: zone\n    whenUnsatisfiable: Sometimes\n",
       "spec.topologySpreadConstraints[0].whenUnsatisfiable: Unsupported value: \"Sometimes\""},
      {"spread minDomains only with DoNotSchedule",
       pod_head + "  containers:\n  - name: c\n    image: x\n  topologySpreadConstraints:\n"
                  "  - maxSkew: 1\n    topologyKey: zone\n    whenUnsatisfiable: ScheduleAnyway\n"
                  "    minDomains: 2\n",
       "spec.topologySpreadConstraints[0].minDomains: Invalid value: \"2\": can only use "
       "minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway"},
      {"spread: one constraint per key and kind",
       pod_head + "  containers:\n  - name: c\n    image: x\n  topologySpreadConstraints:\n"
                  "  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}\n"
                  "  - {maxSkew: 2, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}\n",
       "spec.topologySpreadConstraints[1]: Duplicate value: "},
      {"one source per volume",
       pod_head + "  volumes:\n  - name: v\n    emptyDir: {}\n    hostPath: {path: /tmp}\n"
                  "  containers:\n  - name: c\n    image: x\n",
       "spec.volumes[0]: Forbidden: may not specify more than 1 volume type"},
      {"a GCE disk needs its name",
       pod_head + "  volumes:\n  - name: v\n    gcePersistentDisk: {fsType: ext4}\n"
                  "  containers:\n  - name: c\n    image: x\n",
       "spec.volumes[0].gcePersistentDisk.pdName: Required value"},
      {"pod affinity needs a topology key",
       pod_head + "  containers:\n  - name: c\n    image: x\n  affinity:\n    podAffinity:\n"
                  "      requiredDuringSchedulingIgnoredDuringExecution:\n      - labelSelector:\n"
                  "          matchLabels:\n            app: a\n",
       "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: "
       "Required value"},
      {"taint effect",
       "apiVersion: v1\nkind: Node\nmetadata:\n  name: node01\nspec:\n  taints:\n  - key: k\n"
       "    value: v\n    effect: Sometimes\n",
       "spec.taints[0].effect: Unsupported value: \"Sometimes\": supported values: "
       "\"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\""},
      {"selector must match the template",
       "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  selector:\n"
       "    matchLabels:\n      app: other\n  template:\n    metadata:\n      labels:\n"
       "        app: x\n    spec:\n      containers:\n      - name: c\n        image: nginx\n",
       "spec.template.metadata.labels: Invalid value: \"map[app:x]\": `selector` does not match "
       "template `labels`"},
      {"jobs do not restart always",
       "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\nspec:\n  template:\n    spec:\n"
       "      containers:\n      - name: c\n        image: busybox\n",
       "spec.template.spec.restartPolicy: Unsupported value: \"Always\": supported values: "
       "\"OnFailure\", \"Never\""},
      {"cronjob schedules parse",
       "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: c\nspec:\n  schedule: \"* * *\"\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: OnFailure\n          containers:\n          - name: c\n            image: busybox\n",
       "spec.schedule: Invalid value: \"* * *\": expected exactly 5 fields, found 3: [* * *]"},
      {"cronjob schedules carry no time zone",
       "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: c\nspec:\n  schedule: \"TZ=UTC * * * * *\"\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: OnFailure\n          containers:\n          - name: c\n            image: busybox\n",
       "spec.schedule: Invalid value: \"TZ=UTC * * * * *\": cannot use TZ or CRON_TZ in "
       "schedule, use timeZone field instead"},
      {"cronjob time zones are IANA names",
       "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: c\nspec:\n  schedule: \"@daily\"\n  timeZone: Local\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: OnFailure\n          containers:\n          - name: c\n            image: busybox\n",
       "spec.timeZone: Invalid value: \"Local\": timeZone must be an explicit time zone as "
       "defined in https://www.iana.org/time-zones"},
      {"cronjob concurrency policies",
       "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: c\nspec:\n  schedule: \"@daily\"\n  concurrencyPolicy: Sometimes\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: OnFailure\n          containers:\n          - name: c\n            image: busybox\n",
       "spec.concurrencyPolicy: Unsupported value: \"Sometimes\": supported values: \"Allow\", "
       "\"Forbid\", \"Replace\""},
      {"cronjob history limits",
       "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: c\nspec:\n  schedule: \"@daily\"\n  successfulJobsHistoryLimit: -1\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: OnFailure\n          containers:\n          - name: c\n            image: busybox\n",
       "spec.successfulJobsHistoryLimit: Invalid value: \"-1\": must be greater than or equal "
       "to 0"},
      {"cronjob names leave room for the jobs'",
       "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: a-cronjob-name-that-is-far-too-long-for-its-job-names-x\nspec:\n  schedule: \"@daily\"\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: OnFailure\n          containers:\n          - name: c\n            image: busybox\n",
       "metadata.name: Invalid value: \"a-cronjob-name-that-is-far-too-long-for-its-job-names-x\": "
       "must be no more than 52 characters"},
      {"cronjob jobs do not restart always",
       "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: c\nspec:\n  schedule: \"@daily\"\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: Always\n          containers:\n          - name: c\n            image: busybox\n",
       "spec.jobTemplate.spec.template.spec.restartPolicy: Unsupported value: \"Always\""},
      {"label syntax",
       "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  labels:\n    \"bad key\": x\n",
       "metadata.labels: Invalid value: \"bad key\""},
      // Kubernetes' limits, in apimachinery's words.
      {"names are at most 253 characters",
       "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + std::string(300, 'a') +
           "\nspec:\n  containers:\n  - name: c\n    image: x\n",
       "Pod \"" + std::string(300, 'a') + "\" is invalid: metadata.name: Invalid value: \"" +
           std::string(300, 'a') + "\": must be no more than 253 characters"},
      {"a long name with a bad character is told both",
       "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: " + std::string(254, 'D') +
           "\nspec:\n  selector:\n    matchLabels: {app: x}\n  template:\n    metadata:\n"
           "      labels: {app: x}\n    spec:\n      containers:\n      - name: c\n"
           "        image: nginx\n",
       "[metadata.name: Invalid value: \"" + std::string(254, 'D') +
           "\": must be no more than 253 characters, metadata.name: Invalid value: \"" +
           std::string(254, 'D') +
           "\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
           "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
           "'example.com', regex used for validation is "
           "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')]"},
      {"node names are subdomains too",
       "apiVersion: v1\nkind: Node\nmetadata:\n  name: " + std::string(254, 'n') + "\n",
       "Node \"" + std::string(254, 'n') + "\" is invalid: metadata.name: Invalid value: \"" +
           std::string(254, 'n') + "\": must be no more than 253 characters"},
      {"namespace names are labels: 63 characters",
       "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + std::string(64, 'n') + "\n",
       "Namespace \"" + std::string(64, 'n') + "\" is invalid: metadata.name: Invalid value: \"" +
           std::string(64, 'n') + "\": must be no more than 63 characters"},
      {"namespace names are labels: no dots",
       "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: my.team\n",
       "Namespace \"my.team\" is invalid: metadata.name: Invalid value: \"my.team\": must not "
       "contain dots"},
      {"an object's namespace is a label",
       "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: My_NS\nspec:\n"
       "  containers:\n  - name: c\n    image: x\n",
       "Pod \"p\" is invalid: metadata.namespace: Invalid value: \"My_NS\": a lowercase RFC 1123 "
       "label must consist of lower case alphanumeric characters or '-', and must start and end "
       "with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
       "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"},
      {"a name or a generateName",
       "apiVersion: v1\nkind: Pod\nmetadata:\n  labels: {a: b}\nspec:\n  containers:\n"
       "  - name: c\n    image: x\n",
       "Pod \"\" is invalid: metadata.name: Required value: name or generateName is required"},
      {"generateName is the start of a name",
       "apiVersion: v1\nkind: Pod\nmetadata:\n  generateName: Web-\n  name: web-x1z2q\nspec:\n"
       "  containers:\n  - name: c\n    image: x\n",
       "Pod \"web-x1z2q\" is invalid: metadata.generateName: Invalid value: \"Web-\": a lowercase "
       "RFC 1123 subdomain must consist of"},
      {"generateName is at most 253 characters",
       "apiVersion: v1\nkind: Pod\nmetadata:\n  generateName: " + std::string(260, 'g') +
           "\n  name: web-x1z2q\nspec:\n  containers:\n  - name: c\n    image: x\n",
       "Pod \"web-x1z2q\" is invalid: metadata.generateName: Invalid value: \"" +
           std::string(260, 'g') + "\": must be no more than 253 characters"},
      {"container names are labels",
       pod_head + "  containers:\n  - name: " + std::string(64, 'c') + "\n    image: x\n",
       "Pod \"p\" is invalid: spec.containers[0].name: Invalid value: \"" + std::string(64, 'c') +
           "\": must be no more than 63 characters"},
      {"label key names are at most 63 characters",
       "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  labels:\n    example.com/" +
           std::string(64, 'k') + ": x\n",
       "Node \"n\" is invalid: metadata.labels: Invalid value: \"example.com/" +
           std::string(64, 'k') + "\": name part must be no more than 63 characters"},
      {"label key prefixes are subdomains of at most 253 characters",
       "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  labels:\n    " +
           std::string(254, 'p') + "/k: x\n",
       "Node \"n\" is invalid: metadata.labels: Invalid value: \"" + std::string(254, 'p') +
           "/k\": prefix part must be no more than 253 characters"},
      {"label key prefixes are not empty",
       "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  labels:\n    /k: x\n",
       "Node \"n\" is invalid: metadata.labels: Invalid value: \"/k\": prefix part must be "
       "non-empty"},
      {"label keys have one slash at most",
       "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  labels:\n    a/b/c: x\n",
       "Node \"n\" is invalid: metadata.labels: Invalid value: \"a/b/c\": a qualified name must "
       "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
       "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
       "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS "
       "subdomain prefix and '/' (e.g. 'example.com/MyName')"},
      {"label key names are not empty",
       "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  labels:\n    example.com/: x\n",
       "Node \"n\" is invalid: [metadata.labels: Invalid value: \"example.com/\": name part must "
       "be non-empty, metadata.labels: Invalid value: \"example.com/\": name part must consist "
       "of alphanumeric characters, '-', '_' or '.', and must start and end with an "
       "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
       "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')]"},
      {"label values are at most 63 characters",
       "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  labels:\n    k: " +
           std::string(64, 'v') + "\n",
       "Node \"n\" is invalid: metadata.labels: Invalid value: \"" + std::string(64, 'v') +
           "\": must be no more than 63 characters"},
      {"label values start and end with alphanumerics",
       "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  labels:\n    k: -v\n",
       "Node \"n\" is invalid: metadata.labels: Invalid value: \"-v\": a valid label must be an "
       "empty string or consist of alphanumeric characters, '-', '_' or '.', and must start "
       "and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
       "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"},
      {"template labels alike",
       "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: d\nspec:\n  selector:\n"
       "    matchLabels: {app: x}\n  template:\n    metadata:\n      labels: {app: x, k: " +
           std::string(64, 'v') + "}\n    spec:\n      containers:\n      - name: c\n"
           "        image: nginx\n",
       "DaemonSet \"d\" is invalid: spec.template.metadata.labels: Invalid value: \"" +
           std::string(64, 'v') + "\": must be no more than 63 characters"},
      {"annotation keys are qualified names",
       "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  annotations:\n    bad key: x\n",
       "Node \"n\" is invalid: metadata.annotations: Invalid value: \"bad key\": name part must "
       "consist of alphanumeric characters"},
      {"annotations are 256 KiB at most, keys and values together",
       "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n    a: " +
           std::string(200 << 10, 'x') + "\n    b: " + std::string(100 << 10, 'y') +
           "\nspec:\n  containers:\n  - name: c\n    image: x\n",
       "Pod \"p\" is invalid: metadata.annotations: Too long: may not be more than 262144 bytes"},
      {"a 1 MiB annotation",
       "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n    big: " +
           std::string(1 << 20, 'x') + "\nspec:\n  containers:\n  - name: c\n    image: x\n",
       "Pod \"p\" is invalid: metadata.annotations: Too long: may not be more than 262144 bytes"},
      {"taint keys and values are label keys and values",
       "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\nspec:\n  taints:\n  - key: " +
           std::string(64, 't') + "\n    value: v\n    effect: NoSchedule\n",
       "Node \"n\" is invalid: spec.taints[0].key: Invalid value: \"" + std::string(64, 't') +
           "\": name part must be no more than 63 characters"},
  };
  for (const auto& c : cases) {
    Object obj = Decode(c.text);
    Default(obj);
    const absl::Status st = Validate(obj);
    ASSERT_FALSE(st.ok()) << c.name;
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_NE(std::string(st.message()).find(c.error), std::string::npos)
        << c.name << ":\n  got:  " << st.message() << "\n  want: " << c.error;
  }
}

TEST(Validation, LimitsHoldUpToTheirLastByte) {
  const auto pod = [](const std::string& meta) {
    return Decode("apiVersion: v1\nkind: Pod\nmetadata:\n" + meta +
                  "spec:\n  containers:\n  - name: c\n    image: x\n");
  };
  // 262144 bytes of keys and values, the subdomain's 253 and the label's 63 characters.
  for (const std::string& meta :
       {"  name: p\n  annotations:\n    k: " + std::string((256 << 10) - 1, 'x') + "\n",
        "  name: " + std::string(253, 'a') + "\n",
        "  name: p\n  labels:\n    " + std::string(253, 'p') + "/" + std::string(63, 'k') + ": " +
            std::string(63, 'v') + "\n",
        std::string("  name: web-x1z2q\n  generateName: web-\n"),
        std::string("  name: p\n  annotations:\n    Example.COM/Key: x\n")}) {
    Object obj = pod(meta);
    Default(obj);
    EXPECT_TRUE(Validate(obj).ok()) << Validate(obj);
  }
}

TEST(Validation, SeveralErrorsAreListedTogether) {
  Object obj = Decode(
      "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  restartPolicy: Sometimes\n"
      "  containers:\n  - name: c\n");
  const std::string msg(Validate(obj).message());
  EXPECT_EQ(msg.rfind("Pod \"p\" is invalid: [", 0), 0u) << msg;
  EXPECT_NE(msg.find("spec.containers[0].image: Required value"), std::string::npos) << msg;
  EXPECT_NE(msg.find("spec.restartPolicy: Unsupported value"), std::string::npos) << msg;
}

TEST(QosClass, AsKubernetesWorksItOut) {
  struct Case {
    std::string name, resources, want;
  } cases[] = {
      {"nothing asked", "{}", "BestEffort"},
      {"limits alone: requests default to them", "{limits: {cpu: 100m, memory: 32Mi}}",
       "Guaranteed"},
      {"requests equal to limits",
       "{requests: {cpu: 1, memory: 1Gi}, limits: {cpu: '1', memory: 1Gi}}", "Guaranteed"},
      {"requests below limits", "{requests: {cpu: 50m}, limits: {cpu: 100m, memory: 32Mi}}",
       "Burstable"},
      {"memory limit only", "{limits: {memory: 32Mi}}", "Burstable"},
      {"other resources do not count", "{limits: {ephemeral-storage: 1Gi}}", "BestEffort"},
      {"zero counts as none", "{requests: {cpu: 0, memory: '0'}}", "BestEffort"},
      {"a zero request beside limits", "{requests: {cpu: 0}, limits: {cpu: 1, memory: 1Gi}}",
       "Burstable"},
  };
  for (const auto& c : cases) {
    Object obj = Decode(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
        "  - {name: c, image: busybox, resources: " +
        c.resources + "}\n");
    Default(obj);
    auto* pod = dynamic_cast<Pod*>(obj.message.get());
    ASSERT_NE(pod, nullptr) << c.name;
    PrepareForCreate(pod, "2026-01-01T00:00:00Z");
    EXPECT_EQ(pod->status().qos_class(), c.want) << c.name;
  }
}

}  // namespace
}  // namespace mkube::api
