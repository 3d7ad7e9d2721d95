#pragma once

#include <string>

#include "agent/pods/pod_workers.h"
#include "agent/server/serving.h"
#include "proto/agent/port_forward.grpc.pb.h"

namespace mkube::agent::server {

// pods/portforward on the node: each stream is one TCP connection to the pod's address and
// the port asked for (only the apiserver may call). Bytes are copied as they come,
// one read's worth per message, each side's end passed on as a half-close.
class PortForwardService final : public PortForward::Service {
 public:
  PortForwardService(pods::PodWorkers* pods, const ApiserverAuth* auth)
      : pods_(pods), auth_(auth) {}

  grpc::Status Forward(grpc::ServerContext* ctx,
                       grpc::ServerReaderWriter<PortForwardData, PortForwardData>* stream) override;

 private:
  pods::PodWorkers* pods_;
  const ApiserverAuth* auth_;
};

}  // namespace mkube::agent::server
