#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "api/kinds.h"
#include "google/protobuf/message.h"

namespace mkube::api {

// The value at a JSON field path ("spec.nodeName") as a field selector sees it: strings as
// they are, integers in decimal, booleans as "true"/"false", unset as "". nullopt when the
// path does not name a scalar field.
std::optional<std::string> FieldValue(const google::protobuf::Message& obj, std::string_view path);

// A field selector: "spec.nodeName=node01,status.phase!=Running". Every term must hold.
class FieldSelector {
 public:
  struct Term {
    std::string field;
    bool equals = true;
    std::string value;
  };
  FieldSelector() = default;
  static absl::StatusOr<FieldSelector> Parse(std::string_view text);

  // Refuses fields the kind does not index, with Kubernetes' wording.
  absl::Status CheckSupported(const KindInfo& kind) const;
  bool Matches(const google::protobuf::Message& obj) const;
  bool empty() const { return terms_.empty(); }
  const std::vector<Term>& terms() const { return terms_; }
  std::string String() const;

 private:
  std::vector<Term> terms_;
};

}  // namespace mkube::api
