// kubectl's JSONPath templates, table-driven over one Pod list.
#include "cli/jsonpath.h"

#include <gtest/gtest.h>

namespace mkube::cli {
namespace {

const char kList[] = R"({
  "kind": "List",
  "items": [
    {"metadata": {"name": "web-1", "labels": {"app": "web", "app.kubernetes.io/name": "w"}},
     "spec": {"nodeName": "node01", "containers": [{"name": "a", "image": "nginx"},
                                                   {"name": "b", "image": "busybox"}]},
     "status": {"phase": "Running", "restartCount": 3,
                "conditions": [{"type": "Ready", "status": "True"},
                               {"type": "PodScheduled", "status": "True"}]}},
    {"metadata": {"name": "web-2", "labels": {"app": "web"}},
     "spec": {"containers": [{"name": "a", "image": "nginx"}]},
     "status": {"phase": "Pending", "restartCount": 0,
                "conditions": [{"type": "Ready", "status": "False"}]}}
  ]
})";

std::string Apply(const std::string& tmpl) {
  auto path = JsonPath::Parse(tmpl);
  if (!path.ok()) return "ERROR: " + std::string(path.status().message());
  return path->Execute(nlohmann::ordered_json::parse(kList));
}

TEST(JsonPath, SelectsAsKubectlDoes) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{.items[*].metadata.name}", "web-1 web-2"},
      {"{.items[0].spec.containers[*].image}", "nginx busybox"},
      {"{.items[-1].metadata.name}", "web-2"},
      {"{.items[0:1].metadata.name}", "web-1"},
      {"{.items[0].spec.containers[0,1].name}", "a b"},
      {"{.items[0].metadata.labels['app.kubernetes.io/name']}", "w"},
      {"{.items[0].metadata.labels.app\\.kubernetes\\.io/name}", "w"},
      {"{..image}", "nginx busybox nginx"},
      {"{.items[?(@.status.phase==\"Running\")].metadata.name}", "web-1"},
      {"{.items[?(@.status.restartCount > 1)].metadata.name}", "web-1"},
      {"{.items[?(@.spec.nodeName)].metadata.name}", "web-1"},
      {"{.items[0].status.conditions[?(@.type=='Ready')].status}", "True"},
      {"{range .items[*]}{.metadata.name}{\"\\t\"}{.status.phase}{\"\\n\"}{end}",
       "web-1\tRunning\nweb-2\tPending\n"},
      {"names: {.items[*].metadata.name}!", "names: web-1 web-2!"},
      {"{.items[1].spec.nodeName}", ""},
      {"{.items[1].metadata.labels}", "{\"app\":\"web\"}"},
      {"{.items[0].status.restartCount}", "3"},
      {"{.items[*}", "ERROR: error parsing jsonpath {.items[*}, unterminated array"},
      {"{.items[*", "ERROR: error parsing jsonpath {.items[*, unclosed action"},
      {"{end}", "ERROR: error parsing jsonpath {end}, not in range, nothing to end"},
      {"{range .items[*]}{.metadata.name}", "ERROR: error parsing jsonpath "
                                             "{range .items[*]}{.metadata.name}, unclosed range"},
  };
  for (const auto& [tmpl, want] : cases) EXPECT_EQ(Apply(tmpl), want) << tmpl;
}

TEST(JsonPath, RelaxedFormsAndValues) {
  const auto list = nlohmann::ordered_json::parse(kList);
  for (const std::string expr : {".items[0].metadata.name", "{.items[0].metadata.name}",
                                 "items[0].metadata.name"}) {
    auto path = JsonPath::ParseRelaxed(expr);
    ASSERT_TRUE(path.ok()) << expr << ": " << path.status();
    auto values = path->Values(list);
    ASSERT_EQ(values.size(), 1u) << expr;
    EXPECT_EQ(JsonPathText(*values[0]), "web-1");
  }
}

}  // namespace
}  // namespace mkube::cli
