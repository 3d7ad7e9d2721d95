#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "google/protobuf/map.h"
#include "proto/api/core.pb.h"
#include "proto/api/meta.pb.h"

namespace mkube::api {

// One condition on a set of labels.
struct Requirement {
  enum class Op { kEquals, kNotEquals, kIn, kNotIn, kExists, kDoesNotExist, kGt, kLt };
  std::string key;
  Op op = Op::kExists;
  std::vector<std::string> values;

  bool Matches(const google::protobuf::Map<std::string, std::string>& labels) const;
  std::string String() const;
};

// A label selector: all requirements must hold. The empty selector matches everything.
class Selector {
 public:
  Selector() = default;
  // kubectl's syntax: "app=web,tier!=db,env in (a,b),env notin (c),release,!legacy".
  static absl::StatusOr<Selector> Parse(std::string_view text);
  // matchLabels and matchExpressions (In, NotIn, Exists, DoesNotExist).
  static absl::StatusOr<Selector> FromLabelSelector(const LabelSelector& selector);
  // A node selector term's expressions (adds Gt and Lt on integer values).
  static absl::StatusOr<Selector> FromNodeSelectorTerm(const NodeSelectorTerm& term);
  // Equality on every entry (nodeSelector, ReplicationController selectors).
  static Selector FromMap(const google::protobuf::Map<std::string, std::string>& labels);

  bool Matches(const google::protobuf::Map<std::string, std::string>& labels) const;
  bool empty() const { return requirements_.empty(); }
  const std::vector<Requirement>& requirements() const { return requirements_; }
  std::string String() const;

 private:
  std::vector<Requirement> requirements_;
};

// Syntax of label keys ("prefix/name") and values; the error says what is wrong.
absl::Status ValidateLabelKey(std::string_view key);
absl::Status ValidateLabelValue(std::string_view value);

}  // namespace mkube::api
