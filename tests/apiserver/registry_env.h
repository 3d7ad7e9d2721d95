#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "apiserver/cache/watch_cache.h"
#include "apiserver/registry/registry.h"
#include "apiserver/storage/testing/memory_storage.h"

namespace mkube::testing {

// The apiserver without a transport: its registry and watch cache on the in-memory storage,
// bootstrapped (the default namespaces exist).
struct RegistryEnv {
  static absl::StatusOr<std::unique_ptr<RegistryEnv>> Start() {
    auto env = std::make_unique<RegistryEnv>();
    env->storage = std::make_unique<apiserver::storage::testing::MemoryStorage>();
    env->cache = std::make_unique<apiserver::cache::WatchCache>(env->storage.get());
    if (auto st = env->cache->Start(); !st.ok()) return st;
    env->registry =
        std::make_unique<apiserver::registry::Registry>(env->storage.get(), env->cache.get());
    if (auto st = env->registry->Bootstrap(); !st.ok()) return st;
    return env;
  }
  ~RegistryEnv() {
    if (cache) cache->Stop();
  }

  std::unique_ptr<apiserver::storage::testing::MemoryStorage> storage;
  std::unique_ptr<apiserver::cache::WatchCache> cache;
  std::unique_ptr<apiserver::registry::Registry> registry;
};

}  // namespace mkube::testing
