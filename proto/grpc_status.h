#pragma once

// absl::Status and grpc::Status carry the same codes (gRPC's): one to the other, unchanged.
#include <string>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace mkube {

inline grpc::Status ToGrpc(const absl::Status& st) {
  if (st.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(st.code()), std::string(st.message()));
}

inline absl::Status FromGrpc(const grpc::Status& st) {
  if (st.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(st.error_code()), st.error_message());
}

}  // namespace mkube
