#pragma once

#include "proto/etcd/rpc.grpc.pb.h"
#include "store/server/context.h"

namespace mkube::store::server {

// etcd's Watch service: one bidirectional stream carries many watchers; their events come
// from the WatchHub through a bounded per-stream queue. A raw method: responses go out as
// bytes built from events encoded once for every watcher.
class WatchService final
    : public etcdserverpb::Watch::WithRawCallbackMethod_Watch<etcdserverpb::Watch::Service> {
 public:
  // A stream buffers at most high_water bytes; once refused, it takes more below low_water.
  WatchService(const ServiceContext& ctx, size_t high_water = 4 << 20, size_t low_water = 1 << 20)
      : ctx_(ctx), high_water_(high_water), low_water_(low_water) {}

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Watch(
      grpc::CallbackServerContext* context) override;

 private:
  const ServiceContext& ctx_;
  size_t high_water_;
  size_t low_water_;
};

}  // namespace mkube::store::server
