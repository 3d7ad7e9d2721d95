#pragma once

#include <string>

#include "grpcpp/server_context.h"

namespace mkube::apiserver::server {

// The caller's `authorization` metadata ("Bearer <token>"), or empty.
inline std::string AuthorizationHeader(const grpc::ServerContextBase& ctx) {
  const auto& md = ctx.client_metadata();
  auto it = md.find("authorization");
  return it == md.end() ? "" : std::string(it->second.data(), it->second.size());
}

}  // namespace mkube::apiserver::server
