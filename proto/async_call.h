#pragma once

// One gRPC callback-API unary call whose answer goes to a function: what the call needs (its
// context, request and reply) lives on the heap until the answer comes, and is gone before
// the answer is handed on, so whoever waited for it may then drop the client and its channel.
#include <functional>
#include <utility>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "proto/grpc_status.h"

namespace mkube {

// prepare(ctx) sets the call's metadata and deadline; issue(ctx, req, resp, callback) starts
// it (a stub's async() method); done gets the reply or the call's failure, once, on one of
// gRPC's threads (or the caller's, if gRPC answers at once).
template <typename Req, typename Resp, typename Prepare, typename Issue>
void CallAsync(Req req, std::function<void(absl::StatusOr<Resp>)> done, const Prepare& prepare,
               const Issue& issue) {
  struct Call {
    grpc::ClientContext ctx;
    Req req;
    Resp resp;
    std::function<void(absl::StatusOr<Resp>)> done;
  };
  auto* call = new Call{.req = std::move(req), .done = std::move(done)};
  prepare(&call->ctx);
  issue(&call->ctx, &call->req, &call->resp, [call](grpc::Status st) {
    auto done = std::move(call->done);
    absl::StatusOr<Resp> r = st.ok() ? absl::StatusOr<Resp>(std::move(call->resp)) : FromGrpc(st);
    delete call;
    done(std::move(r));
  });
}

}  // namespace mkube
