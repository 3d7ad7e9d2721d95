// What a kubectl user types, through build/bin/mkubectl against a real store and apiserver:
// global flags anywhere on the line, several types at once, JSONPath and custom columns,
// --sort-by, replace, edit and api-versions.
#include <regex>

#include "tests/integration/mkubectl_fixture.h"

namespace mkube::testing {
namespace {

using ::testing::HasSubstr;

class MkubectlHabitsTest : public MkubectlTest {};

TEST_F(MkubectlHabitsTest, GlobalFlagsAfterTheVerb) {
  auto r = Ctl({"get", "pods", "-n", "kube-system"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "No resources found in kube-system namespace.\n");
  r = Ctl({"get", "namespaces", "--request-timeout", "5s", "--no-headers", "-o", "name"});
  EXPECT_THAT(r.out, HasSubstr("namespace/kube-system\n")) << r.err;
  // --kubeconfig after the verb wins over MKUBECONFIG (here: the one with a wrong token).
  r = Ctl({"get", "pods", "--kubeconfig", dir().Sub("wrong-token")});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("Unauthorized"));
  r = Ctl({"get", "pods", "--token", "nope"});
  EXPECT_THAT(r.err, HasSubstr("Unauthorized"));
}

TEST_F(MkubectlHabitsTest, SeveralTypesJsonPathCustomColumnsAndSortBy) {
  ASSERT_EQ(Ctl({"apply", "-f", Seed("pod1.yaml"), "-f", Seed("myapp.yaml")}).exit_code, 0);
  auto r = Ctl({"get", "deploy,po", "-o", "name"});
  EXPECT_EQ(r.out, "deployment.apps/myapp\npod/nginx001\n") << r.err;
  r = Ctl({"get", "deploy,po"});
  EXPECT_THAT(r.out, HasSubstr("deployment.apps/myapp   0/3"));
  EXPECT_THAT(r.out, HasSubstr("\n\nNAME "));  // a blank line, then the pods' table
  EXPECT_THAT(r.out, HasSubstr("\npod/nginx001 "));

  r = Ctl({"get", "pod", "nginx001", "-o", "jsonpath={.metadata.name} {.spec.containers[0].image}"});
  EXPECT_EQ(r.out, "nginx001 soscscs/myapp:v1") << r.err;
  r = Ctl({"get", "deploy", "-o",
           "jsonpath={range .items[*]}{.metadata.name}:{.spec.replicas}{\"\\n\"}{end}"});
  EXPECT_EQ(r.out, "myapp:3\n") << r.err;
  r = Ctl({"get", "deploy", "myapp", "-o", "custom-columns=NAME:.metadata.name,WANT:.spec.replicas,"
                                             "MISSING:.status.nothing"});
  EXPECT_EQ(r.out, "NAME    WANT   MISSING\nmyapp   3      <none>\n") << r.err;

  // Sorted by a number, not by name: 10 after 9.
  for (const auto& [name, replicas] : {std::pair{"aa", 10}, {"bb", 9}}) {
    std::string text = ReadFile(Seed("myapp.yaml"));
    text.replace(text.find("replicas: 3"), 11, "replicas: " + std::to_string(replicas));
    text.replace(text.find("name: myapp"), 11, std::string("name: ") + name);
    ASSERT_EQ(Ctl({"apply", "-f", "-"}, text).exit_code, 0);
  }
  r = Ctl({"get", "deploy", "--sort-by", ".spec.replicas", "-o", "jsonpath={.items[*].metadata.name}"});
  EXPECT_EQ(r.out, "myapp bb aa") << r.err;
  r = Ctl({"get", "deploy", "--sort-by", "{.metadata.name}", "-o", "name"});
  EXPECT_EQ(r.out, "deployment.apps/aa\ndeployment.apps/bb\ndeployment.apps/myapp\n") << r.err;
  ASSERT_EQ(Ctl({"delete", "deploy", "aa", "bb"}).exit_code, 0);

  r = Ctl({"get", "pods", "-o", "jsonpath={.items[*"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "error: error parsing jsonpath {.items[*, unclosed action\n");
  r = Ctl({"get", "pods", "-o", "custom-columns=NAME"});
  EXPECT_EQ(r.err,
            "error: unexpected custom-columns spec: NAME, expected <header>:<json-path-expr>\n");
  r = Ctl({"get", "pods", "-o", "yml"});
  EXPECT_THAT(r.err, HasSubstr("allowed formats are: custom-columns,json,jsonpath,name,wide,yaml"));

  r = Ctl({"describe", "deploy,po"});
  EXPECT_THAT(r.out, HasSubstr("Name:                   myapp\n")) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Name:         nginx001\n"));
  r = Ctl({"delete", "deploy,po", "--all"});
  EXPECT_EQ(r.out, "deployment.apps \"myapp\" deleted\npod \"nginx001\" deleted\n") << r.err;
}

TEST_F(MkubectlHabitsTest, RunAndCreateDeployment) {
  auto r = Ctl({"run", "bb", "--image=busybox", "--restart=Never", "--", "sh", "-c", "echo hi"});
  EXPECT_EQ(r.out, "pod/bb created\n") << r.err;
  r = Ctl({"get", "pod", "bb", "-o",
           "jsonpath={.metadata.labels.run} {.spec.restartPolicy} {.spec.containers[0].args}"});
  EXPECT_EQ(r.out, R"(bb Never ["sh","-c","echo hi"])") << r.err;
  // Whatever option comes last before "--", the words after it are the container's.
  r = Ctl({"run", "lb", "--image=busybox", "--restart=Never", "--labels=app=x", "--", "sh", "-c",
           "echo hi"});
  EXPECT_EQ(r.out, "pod/lb created\n") << r.err;
  r = Ctl({"get", "pod", "lb", "-o", "jsonpath={.metadata.labels} {.spec.containers[0].args}"});
  EXPECT_EQ(r.out, R"({"app":"x"} ["sh","-c","echo hi"])") << r.err;
  r = Ctl({"run", "le", "--image=busybox", "--env", "X=1", "--", "sh", "-c", "echo $X"});
  EXPECT_EQ(r.out, "pod/le created\n") << r.err;
  r = Ctl({"run", "s", "--image", "busybox", "-l", "a=b", "--env", "X=1", "--command", "--",
           "sleep", "9"});
  EXPECT_EQ(r.out, "pod/s created\n") << r.err;
  r = Ctl({"get", "pod", "s", "-o",
           "jsonpath={.metadata.labels} {.spec.containers[0].command} {.spec.containers[0].env[0].value}"});
  EXPECT_EQ(r.out, R"({"a":"b"} ["sleep","9"] 1)") << r.err;
  EXPECT_EQ(Ctl({"run", "x"}).err, "error: required flag(s) \"image\" not set\n");

  r = Ctl({"create", "deployment", "web", "--image=soscscs/myapp:v1", "--replicas=2", "--port=80"});
  EXPECT_EQ(r.out, "deployment.apps/web created\n") << r.err;
  r = Ctl({"get", "deploy", "web", "-o",
           "jsonpath={.spec.replicas} {.spec.selector.matchLabels.app} "
           "{.spec.template.spec.containers[0].name} {.spec.template.spec.containers[0].ports[0].containerPort}"});
  EXPECT_EQ(r.out, "2 web myapp 80") << r.err;
  EXPECT_EQ(Ctl({"create", "deployment", "web2"}).err,
            "error: required flag(s) \"image\" not set\n");
  ASSERT_EQ(Ctl({"delete", "pods", "bb", "s", "lb", "le", "--grace-period=0", "--force"}).exit_code,
            0);
  ASSERT_EQ(Ctl({"delete", "deploy", "web"}).exit_code, 0);
}

TEST_F(MkubectlHabitsTest, ManifestsTooLargeOrOverKubernetesLimitsGetItsAnswers) {
  const auto pod = [](const std::string& name, const std::string& meta, size_t arg) {
    return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n" + meta +
           "spec:\n  containers:\n  - name: c\n    image: busybox\n    args: [\"" +
           std::string(arg, 'x') + "\"]\n";
  };
  // Over the apiserver's 3 MiB.
  std::string file = Write("huge.yaml", pod("huge", "", 8 << 20));
  auto r = Ctl({"create", "-f", file});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "Error from server (RequestEntityTooLarge): error when creating \"" + file +
                       "\": Request entity too large: limit is 3145728\n");
  // Under it, over the store's 1.5 MiB.
  file = Write("big.yaml", pod("big", "", 2 << 20));
  r = Ctl({"create", "-f", file});
  EXPECT_EQ(r.err, "Error from server: error when creating \"" + file +
                       "\": etcdserver: request is too large\n");
  // Over Kubernetes' own limits: 262144 bytes of annotations, 253 characters of name.
  file = Write("annotated.yaml", pod("annotated", "  annotations:\n    big: " +
                                                      std::string(1 << 20, 'a') + "\n",
                                     1));
  r = Ctl({"apply", "-f", file});
  EXPECT_EQ(r.err, "Error from server (Invalid): error when creating \"" + file +
                       "\": Pod \"annotated\" is invalid: metadata.annotations: Too long: may not "
                       "be more than 262144 bytes\n");
  const std::string name(300, 'n');
  file = Write("long.yaml", pod(name, "", 1));
  r = Ctl({"create", "-f", file});
  EXPECT_EQ(r.err, "Error from server (Invalid): error when creating \"" + file + "\": Pod \"" +
                       name + "\" is invalid: metadata.name: Invalid value: \"" + name +
                       "\": must be no more than 253 characters\n");
  r = Ctl({"get", "pods", "-o", "name"});
  EXPECT_EQ(r.out, "") << "nothing was stored";
}

TEST_F(MkubectlHabitsTest, WaitForAFieldAConditionOrDeletion) {
  ASSERT_EQ(Ctl({"run", "w", "--image=busybox"}).exit_code, 0);
  auto r = Ctl({"wait", "pod/w", "--for=jsonpath={.spec.restartPolicy}=Always", "--timeout=10s"});
  EXPECT_EQ(r.out, "pod/w condition met\n") << r.err;
  // No agent runs here: the pod never becomes Ready.
  r = Ctl({"wait", "pod", "w", "--for", "condition=Ready", "--timeout", "1s"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "error: timed out waiting for the condition on pods/w\n");
  // Deleted while waiting (no agent: force it).
  ASSERT_EQ(Ctl({"delete", "pod", "w", "--grace-period=0", "--force"}).exit_code, 0);
  r = Ctl({"wait", "--for=delete", "pod/w", "--timeout=10s"});
  EXPECT_EQ(r.out, "pod/w condition met\n") << r.err;
  r = Ctl({"wait", "pod/w", "--for=ready"});
  EXPECT_THAT(r.err, HasSubstr("error: unrecognized condition: \"ready\""));
}

TEST_F(MkubectlHabitsTest, CompletionOffersVerbsTypesAndNames) {
  ASSERT_EQ(Ctl({"run", "c1", "--image=busybox"}).exit_code, 0);
  // The script as bash sources it, then the completion function at three places on a line.
  const std::string script = R"(
source <(mkubectl completion bash)
complete_at() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _mkubectl; echo "${COMPREPLY[*]}"; }
complete_at mkubectl pa
complete_at mkubectl get deplo
complete_at mkubectl get pods c
complete_at mkubectl patch pod c1 --type ""
)";
  auto r = RunCommand({"/bin/bash", "-c", script}, {{"MKUBECONFIG", dir().Sub("config")},
                                                    {"PATH", BinDir() + ":/usr/bin:/bin"}});
  EXPECT_EQ(r.out, "patch\ndeploy deployment deployments\nc1\njson merge strategic\n") << r.err;
  r = Ctl({"completion", "zsh"});
  EXPECT_THAT(r.out, HasSubstr("autoload -U +X bashcompinit && bashcompinit\n"));
  EXPECT_THAT(r.out, HasSubstr("complete -F _mkubectl mkubectl\n"));
  EXPECT_EQ(Ctl({"completion", "fish"}).err, "error: Unsupported shell type \"fish\".\n");
  ASSERT_EQ(Ctl({"delete", "pod", "c1", "--grace-period=0", "--force"}).exit_code, 0);
}

TEST_F(MkubectlHabitsTest, GetRawAnswersKubernetesRestPaths) {
  EXPECT_EQ(Ctl({"get", "--raw", "/readyz"}).out, "ok");
  auto r = Ctl({"get", "--raw", "/api/v1/namespaces/default"});
  EXPECT_THAT(r.out, HasSubstr(R"("kind":"Namespace")")) << r.err;
  r = Ctl({"get", "--raw", "/apis/apps/v1/namespaces/kube-system/deployments"});
  EXPECT_THAT(r.out, HasSubstr(R"({"kind":"DeploymentList","apiVersion":"apps/v1")")) << r.err;
  EXPECT_THAT(r.out, HasSubstr(R"("items":[])"));
  r = Ctl({"get", "--raw", "/api/v1/namespaces/default/pods/nope"});
  EXPECT_EQ(r.err, "Error from server (NotFound): pods \"nope\" not found\n");
  r = Ctl({"get", "--raw", "/apis/apps/v1/pods"});
  EXPECT_EQ(r.err, "Error from server (NotFound): the server could not find the requested "
                   "resource (get /apis/apps/v1/pods)\n");
  EXPECT_EQ(Ctl({"get", "pods", "--raw", "/api/v1/pods"}).err,
            "error: arguments may not be passed when --raw is specified\n");
}

TEST_F(MkubectlHabitsTest, ConfigContexts) {
  cluster_->WriteKubeconfig(dir().Sub("contexts"), "admin-token");  // a copy this test may change
  auto ctl = [&](std::vector<std::string> args) { return Ctl(std::move(args), "", "contexts"); };
  auto r = ctl({"config", "view"});
  EXPECT_THAT(r.out, HasSubstr("token: REDACTED")) << r.err;
  EXPECT_THAT(ctl({"config", "view", "--raw"}).out, HasSubstr("token: admin-token"));
  EXPECT_EQ(ctl({"config", "current-context"}).out, "test\n");
  r = ctl({"config", "set-context", "--current", "--namespace=kube-system"});
  EXPECT_EQ(r.out, "Context \"test\" modified.\n") << r.err;
  EXPECT_EQ(ctl({"get", "pods"}).err, "No resources found in kube-system namespace.\n");
  r = ctl({"config", "set-context", "other", "--cluster", "test", "--user", "admin"});
  EXPECT_EQ(r.out, "Context \"other\" created.\n") << r.err;
  EXPECT_EQ(ctl({"config", "use-context", "other"}).out, "Switched to context \"other\".\n");
  r = ctl({"config", "get-contexts"});
  EXPECT_EQ(r.out,
            "CURRENT   NAME    CLUSTER   AUTHINFO   NAMESPACE\n"
            "          test    test      admin      kube-system\n"
            "*         other   test      admin      \n")
      << r.err;
  EXPECT_EQ(ctl({"get", "pods"}).err, "No resources found in default namespace.\n");
  r = ctl({"config", "use-context", "nope"});
  EXPECT_EQ(r.err, "error: no context exists with the name: \"nope\"\n");
  EXPECT_EQ(r.exit_code, 1);
}

TEST_F(MkubectlHabitsTest, PatchStrategicMergeAndJson) {
  ASSERT_EQ(Ctl({"apply", "-f", Seed("myapp.yaml")}).exit_code, 0);
  // kubectl's default, strategic: the container is merged by name, its ports stay.
  auto r = Ctl({"patch", "deployment", "myapp", "-p",
                R"({"spec":{"template":{"spec":{"containers":[{"name":"myapp","image":"soscscs/myapp:v2"}]}}}})"});
  EXPECT_EQ(r.out, "deployment.apps/myapp patched\n") << r.err;
  r = Ctl({"get", "deploy", "myapp", "-o",
           "jsonpath={.spec.template.spec.containers[0].image} "
           "{.spec.template.spec.containers[0].ports[0].containerPort}"});
  EXPECT_EQ(r.out, "soscscs/myapp:v2 80") << r.err;
  r = Ctl({"patch", "deploy/myapp", "--type", "merge", "-p", R"({"spec":{"replicas":3}})"});
  EXPECT_EQ(r.out, "deployment.apps/myapp patched (no change)\n") << r.err;
  r = Ctl({"patch", "deploy", "myapp", "--type=json", "-p",
           R"([{"op":"replace","path":"/spec/replicas","value":1}])"});
  EXPECT_EQ(r.out, "deployment.apps/myapp patched\n") << r.err;
  EXPECT_EQ(Ctl({"get", "deploy", "myapp", "-o", "jsonpath={.spec.replicas}"}).out, "1");

  r = Ctl({"patch", "deploy", "myapp", "--type", "json", "-p", R"([{"op":"remove","path":"/x"}])"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "error: key 'x' not found\n");
  r = Ctl({"patch", "deploy", "myapp", "--type", "xml", "-p", "{}"});
  EXPECT_EQ(r.err, "error: --type must be one of [json merge strategic], not \"xml\"\n");
  r = Ctl({"patch", "deploy", "myapp"});
  EXPECT_EQ(r.err,
            "error: must specify --patch or --patch-file containing the contents of the patch\n");
  r = Ctl({"patch", "deploy", "nope", "-p", "{}"});
  EXPECT_EQ(r.err, "Error from server (NotFound): deployments.apps \"nope\" not found\n");
  ASSERT_EQ(Ctl({"delete", "deploy", "myapp"}).exit_code, 0);
}

}  // namespace
}  // namespace mkube::testing

namespace mkube::testing {
namespace {

class MkubectlEditTest : public MkubectlTest {
 protected:
  // mkubectl with EDITOR set to a shell command (the file's path is its last word).
  static CommandResult WithEditor(const std::string& editor, std::vector<std::string> args) {
    return cluster_->Ctl(std::move(args), "", std::chrono::seconds(30), {{"EDITOR", editor}});
  }
  static std::string Replicas(const std::string& name) {
    return Ctl({"get", "deploy", name, "-o", "jsonpath={.spec.replicas}"}).out;
  }
};

TEST_F(MkubectlEditTest, ReplaceWholeObjects) {
  ASSERT_EQ(Ctl({"create", "deployment", "rep", "--image=busybox", "--replicas=2"}).exit_code, 0);
  auto yaml = Ctl({"get", "deploy", "rep", "-o", "yaml"}).out;
  const std::string three = std::regex_replace(yaml, std::regex("replicas: 2"), "replicas: 3");
  auto r = Ctl({"replace", "-f", "-"}, three);
  EXPECT_EQ(r.out, "deployment.apps/rep replaced\n") << r.err;
  EXPECT_EQ(Replicas("rep"), "3");
  // The same text again carries a resourceVersion that is no longer current.
  r = Ctl({"replace", "-f", "-"}, three);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("Error from server (Conflict)"));
  const std::string uid = Ctl({"get", "deploy", "rep", "-o", "jsonpath={.metadata.uid}"}).out;
  r = Ctl({"replace", "--force", "-f", "-"}, three);
  EXPECT_EQ(r.out, "deployment.apps \"rep\" deleted\ndeployment.apps/rep replaced\n") << r.err;
  EXPECT_NE(Ctl({"get", "deploy", "rep", "-o", "jsonpath={.metadata.uid}"}).out, uid);
  r = Ctl({"replace", "-f", "-"},
          "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: nosuch}\nspec:\n"
          "  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n"
          "    spec: {containers: [{name: c, image: busybox}]}\n");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("Error from server (NotFound): error when replacing \"STDIN\""));
  ASSERT_EQ(Ctl({"delete", "deploy", "rep"}).exit_code, 0);
}

TEST_F(MkubectlEditTest, EditInTheUsersEditor) {
  ASSERT_EQ(Ctl({"create", "deployment", "ed", "--image=busybox", "--replicas=2"}).exit_code, 0);
  auto r = WithEditor("sed -i 's/replicas: 2/replicas: 4/'", {"edit", "deployment/ed"});
  EXPECT_EQ(r.out, "deployment.apps/ed edited\n") << r.err;
  EXPECT_EQ(Replicas("ed"), "4");
  r = WithEditor("true", {"edit", "deploy", "ed"});
  EXPECT_EQ(r.out, "Edit cancelled, no changes made.\n") << r.err;
  // An edit the server refuses: the changes are kept in a file named in the error.
  r = WithEditor("sed -i 's/replicas: 4/replicas: -1/'", {"edit", "deploy", "ed"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("Error from server (Invalid)"));
  std::smatch kept;
  ASSERT_TRUE(std::regex_search(r.err, kept, std::regex("stored to \"([^\"]+)\""))) << r.err;
  EXPECT_THAT(ReadFile(kept[1]), HasSubstr("replicas: -1"));
  std::remove(kept[1].str().c_str());
  EXPECT_EQ(Replicas("ed"), "4");
  r = WithEditor("false", {"edit", "deploy", "ed"});
  EXPECT_EQ(r.err, "error: there was a problem with the editor \"false\"\n");
  EXPECT_EQ(Ctl({"edit", "deploy", "nosuch"}).err,
            "Error from server (NotFound): deployments.apps \"nosuch\" not found\n");
  ASSERT_EQ(Ctl({"delete", "deploy", "ed"}).exit_code, 0);
}

TEST_F(MkubectlEditTest, ApiVersions) {
  EXPECT_EQ(Ctl({"api-versions"}).out,
            "apps/v1\nbatch/v1\ncoordination.k8s.io/v1\nmetrics.k8s.io/v1beta1\npolicy/v1\nv1\n");
}

}  // namespace
}  // namespace mkube::testing
