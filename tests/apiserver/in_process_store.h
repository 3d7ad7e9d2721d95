#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "store/server/store_server.h"

namespace mkube::testing {

// mkube-store in this process, on a free loopback port, with its data under `dir`.
inline absl::StatusOr<std::unique_ptr<store::server::StoreServer>> StartInProcessStore(
    const std::string& dir) {
  store::server::ServerOptions o;
  o.store.data_dir = dir;
  o.listen = "127.0.0.1:0";
  return store::server::StoreServer::Start(o);
}

}  // namespace mkube::testing
