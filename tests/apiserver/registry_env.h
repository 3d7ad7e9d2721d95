#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "apiserver/cache/watch_cache.h"
#include "apiserver/registry/registry.h"
#include "apiserver/storage/etcd_storage.h"
#include "tests/apiserver/in_process_store.h"

namespace mkube::testing {

// The apiserver without a transport: its registry and watch cache on an in-process
// mkube-store, bootstrapped (the default namespaces exist).
struct RegistryEnv {
  static absl::StatusOr<std::unique_ptr<RegistryEnv>> Start(const std::string& dir) {
    auto env = std::make_unique<RegistryEnv>();
    auto s = StartInProcessStore(dir);
    if (!s.ok()) return s.status();
    env->store = std::move(*s);
    env->store_client = std::make_unique<apiserver::storage::EtcdStorage>(env->store->address());
    env->cache = std::make_unique<apiserver::cache::WatchCache>(env->store_client.get());
    if (auto st = env->cache->Start(); !st.ok()) return st;
    env->registry =
        std::make_unique<apiserver::registry::Registry>(env->store_client.get(), env->cache.get());
    if (auto st = env->registry->Bootstrap(); !st.ok()) return st;
    return env;
  }
  ~RegistryEnv() {
    if (cache) cache->Stop();
  }

  std::unique_ptr<store::server::StoreServer> store;
  std::unique_ptr<apiserver::storage::EtcdStorage> store_client;
  std::unique_ptr<apiserver::cache::WatchCache> cache;
  std::unique_ptr<apiserver::registry::Registry> registry;
};

}  // namespace mkube::testing
