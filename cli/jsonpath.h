#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace mkube::cli {

// kubectl's JSONPath templates (-o jsonpath=..., custom-columns, --sort-by): literal text
// with {actions} between, where an action is a path (.a.b, ['a.b'], [0], [-1], [1:3], [*],
// ..name, [?(@.type=="Ready")], unions [0,2]), a quoted string ({"\n"}), or
// {range PATH}...{end}. Several results of one path print separated by spaces; a missing
// field prints nothing, as `kubectl get` prints it.
class JsonPath {
 public:
  struct Node;
  using Nodes = std::vector<std::unique_ptr<Node>>;

  // Errors name the problem as kubectl does ("unclosed action", "not in range, nothing to end").
  static absl::StatusOr<JsonPath> Parse(const std::string& text);
  // As custom-columns and --sort-by take them: ".metadata.name" or "{.metadata.name}".
  static absl::StatusOr<JsonPath> ParseRelaxed(const std::string& text);

  JsonPath(JsonPath&&) noexcept;
  JsonPath& operator=(JsonPath&&) noexcept;
  ~JsonPath();

  std::string Execute(const nlohmann::ordered_json& root) const;
  // The values the template's paths select, in order (for columns and sorting).
  std::vector<const nlohmann::ordered_json*> Values(const nlohmann::ordered_json& root) const;

 private:
  JsonPath();
  Nodes nodes_;
};

// A value as JSONPath prints it: strings bare, numbers and booleans as JSON, objects and
// arrays as compact JSON, null as nothing.
std::string JsonPathText(const nlohmann::ordered_json& v);

}  // namespace mkube::cli
