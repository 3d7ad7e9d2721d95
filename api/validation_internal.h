#pragma once

// What validation.cc and validation_pod.cc share: Kubernetes' ways of quoting values and
// naming paths, and the pod spec's checks that workloads reuse for their templates.
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "api/validation.h"
#include "fmt/format.h"
#include "google/protobuf/map.h"

namespace mkube::api {

class PodSpec;

namespace validation {

inline std::string Quote(std::string_view s) { return fmt::format("\"{}\"", s); }
inline std::string Msg(const absl::Status& st) { return std::string(st.message()); }
inline std::string At(const std::string& path, size_t i) { return fmt::format("{}[{}]", path, i); }
inline const std::vector<std::string>& TaintEffects() {
  static const auto* effects =
      new std::vector<std::string>{"NoSchedule", "PreferNoSchedule", "NoExecute"};
  return *effects;
}

void ValidateLabels(const google::protobuf::Map<std::string, std::string>& labels,
                    const std::string& path, FieldErrors* errs);
void ValidatePodSpec(const PodSpec& spec, const std::string& path, FieldErrors* errs);

}  // namespace validation
}  // namespace mkube::api
