#pragma once

#include <string>

#include "base/http/server.h"

// /openapi/v3 (its index and one document per group-version) and /openapi/v2, generated from
// the kinds' protobuf descriptors: a schema per message with Kubernetes' JSON names and types,
// int-or-string fields marked, the lists that merge by key marked with their patch strategy,
// and for each kind the paths and operations with their GVK and parameters (fieldValidation
// among them, so kubectl leaves validation to the server).
namespace mkube::apiserver::rest {

mkube::http::Response ServeOpenApi(const std::string& path, const std::string& query,
                                   const std::string& accept = "application/json");

}  // namespace mkube::apiserver::rest
