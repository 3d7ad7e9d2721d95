#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "api/kinds.h"
#include "api/names.h"

namespace mkube::api {

// Collects field errors in Kubernetes' wording and turns them into one status:
//   Pod "x" is invalid: spec.containers[0].image: Required value
//   Pod "x" is invalid: [metadata.name: Invalid value: "X": ..., spec.restartPolicy: ...]
class FieldErrors {
 public:
  void Required(const std::string& path);
  void Invalid(const std::string& path, std::string_view value, std::string_view why);
  void Unsupported(const std::string& path, std::string_view value,
                   const std::vector<std::string>& supported);
  void Duplicate(const std::string& path, std::string_view value);
  void Forbidden(const std::string& path, std::string_view why);
  // "path: Too long: may not be more than N bytes" (the value is not shown).
  void TooLong(const std::string& path, size_t max_bytes);
  bool empty() const { return errors_.empty(); }
  const std::vector<std::string>& errors() const { return errors_; }
  // INVALID_ARGUMENT naming the object, or OK when there was nothing wrong.
  absl::Status ToStatus(std::string_view kind, std::string_view name) const;

 private:
  std::vector<std::string> errors_;
};

// Validates a decoded (and defaulted) object of any kind.
absl::Status Validate(const Object& obj);

}  // namespace mkube::api
