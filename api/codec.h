#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "google/protobuf/message.h"
#include "nlohmann/json.hpp"
#include "yaml-cpp/yaml.h"

// Manifests to messages and back. Decoding walks the message's descriptor alongside the YAML
// (or JSON, which is YAML too) tree, matching Kubernetes' JSON field names (json_name), so
// every error names the field it is about: `spec.containers[0].ports[0].containerPort:
// expected an integer, got "eighty"`, `unknown field "spec.containers[0].imagee"`.
namespace mkube::api {

// Splits a multi-document YAML stream (or one JSON document) into its non-empty documents.
absl::StatusOr<std::vector<YAML::Node>> ParseDocuments(std::string_view text);

// Fills msg from node. `path` prefixes field paths in errors. A field the message has not is
// refused (`unknown field "spec.foo"`), unless `unknown` is given: then its path goes there and
// it is skipped (Kubernetes' fieldValidation Warn and Ignore).
absl::Status DecodeNode(const YAML::Node& node, google::protobuf::Message* msg,
                        const std::string& path = "", std::vector<std::string>* unknown = nullptr);

// The message as Kubernetes would write it: fields in declaration order, unset and empty ones
// left out.
nlohmann::ordered_json EncodeJson(const google::protobuf::Message& msg);
std::string ToJson(const google::protobuf::Message& msg, bool pretty = true);
// Keys sorted, as kubectl prints YAML.
std::string ToYaml(const google::protobuf::Message& msg);
std::string JsonToYaml(const nlohmann::ordered_json& json);

}  // namespace mkube::api
