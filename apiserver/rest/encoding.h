#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "api/kinds.h"
#include "apiserver/cache/watch_cache.h"
#include "apiserver/server/request_metrics.h"
#include "base/http/server.h"
#include "google/protobuf/message.h"
#include "nlohmann/json.hpp"
#include "yaml-cpp/yaml.h"

// Objects, lists, Tables and errors as the Kubernetes API writes them in JSON.
namespace mkube::apiserver::rest {

using Json = nlohmann::ordered_json;

// What an error is about, for the Status' details.
struct Subject {
  const api::KindInfo* kind = nullptr;
  std::string name;
};

// Kubernetes' 404 for a path it serves nothing at.
absl::Status NotServed();

// The HTTP code and Kubernetes reason of a status: NOT_FOUND 404 NotFound, ALREADY_EXISTS 409
// AlreadyExists, ABORTED 409 Conflict, INVALID_ARGUMENT 422 Invalid, OUT_OF_RANGE 410 Expired,
// UNAUTHENTICATED 401, PERMISSION_DENIED 403 Forbidden, RESOURCE_EXHAUSTED 429 (413 for a
// request too large), DEADLINE_EXCEEDED 504 Timeout, UNAVAILABLE 503, UNIMPLEMENTED 405.
using server::HttpCode;
std::string Reason(const absl::Status& st);
// A failure as a metav1.Status; `code`/`reason` override the ones the status maps to.
Json StatusJson(const absl::Status& st, const Subject& about = {}, int code = 0,
                std::string_view reason = "");
Json SuccessJson(int code);
mkube::http::Response StatusResponse(const absl::Status& st, const Subject& about = {},
                                     int code = 0, std::string_view reason = "");
// A request the front itself refuses: 400 BadRequest, 415, 405, ...
mkube::http::Response Refusal(int code, std::string_view reason, const std::string& message);
// Why a stream to a pod (log, exec, attach, portforward) cannot start, as kube-apiserver
// words it: a request that names no container, or a pod not yet placed, is a BadRequest.
mkube::http::Response ResolveRefusal(const absl::Status& st);
mkube::http::Response JsonResponse(int status, const Json& body,
                                   std::string content_type = "application/json");

// An object with its apiVersion and kind first, as the API serves it.
Json ObjectJson(const api::KindInfo& kind, const google::protobuf::Message& obj);
// A cached object's JSON text, made once per object and shared by every list and watch.
const std::string& ObjectText(const cache::Entry& entry);
// The same from the serialized message; an error when it does not decode.
absl::StatusOr<Json> ObjectJson(const api::KindInfo& kind, const std::string& bytes);
// A message that is no stored kind (Scale, Status-like replies), under the given type.
Json TypedJson(const std::string& api_version, const std::string& kind,
               const google::protobuf::Message& obj);

// A request body (JSON, which is YAML too, or YAML) as a map; the error says what is wrong.
absl::StatusOr<YAML::Node> LoadBody(const std::string& text);
// A message that is no kind of the path's (Scale, Eviction, Binding) from a JSON or YAML body.
absl::Status DecodeMessage(const std::string& body, google::protobuf::Message* msg);
// Whether an object in a request body of this Content-Type can be read: JSON, YAML (an apply
// patch's too) or Kubernetes' protobuf (absent: JSON).
bool ReadableBody(const std::string& content_type);

// The Accept header asks for a Table (kubectl get).
bool WantsTable(const std::string& accept);
// A meta.k8s.io/v1 Table of `objects` with kubectl's columns (priority 1 for -o wide's),
// each row carrying its object's metadata as a PartialObjectMetadata.
Json TableJson(const api::KindInfo& kind,
               const std::vector<const google::protobuf::Message*>& objects,
               const std::string& resource_version, const std::string& continue_token = "");

}  // namespace mkube::apiserver::rest
