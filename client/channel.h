#pragma once

#include <memory>

#include "grpcpp/grpcpp.h"

namespace mkube::client {

struct ClientOptions;

// A channel to the apiserver as ClientOptions describe it (address, TLS, connection
// sharing), for the services GrpcClient does not wrap.
std::shared_ptr<grpc::Channel> NewChannel(const ClientOptions& options);

}  // namespace mkube::client
