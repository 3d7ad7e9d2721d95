#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "api/codec.h"

namespace mkube::testing {

// An object written as a manifest (YAML or JSON) in a test, decoded as its kind's message.
template <typename T>
absl::StatusOr<T> FromYaml(const std::string& yaml) {
  T obj;
  if (auto st = api::DecodeNode(YAML::Load(yaml), &obj); !st.ok()) return st;
  return obj;
}

}  // namespace mkube::testing
