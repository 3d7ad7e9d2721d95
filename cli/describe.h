#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "api/kinds.h"
#include "google/protobuf/message.h"
#include "proto/api/apps.pb.h"
#include "proto/api/core.pb.h"

namespace mkube::cli {

// `mkubectl describe`'s text, as kubectl lays it out. Events are the object's own, any order.
// `image_ports`: by container name, the ports its image exposes (shown as Image Ports).
std::string DescribePod(const api::Pod& pod, const std::vector<api::Event>& events, absl::Time now,
                        const std::map<std::string, std::vector<std::string>>& image_ports = {});
// `pods` are the node's non-terminated pods; `lease` its heartbeat lease, when it has one.
std::string DescribeNode(const api::Node& node, const api::Lease* lease,
                         const std::vector<api::Pod>& pods, const std::vector<api::Event>& events,
                         absl::Time now);
// `replica_sets` are the deployment's, newest last.
std::string DescribeDeployment(const api::Deployment& d,
                               const std::vector<api::ReplicaSet>& replica_sets,
                               const std::vector<api::Event>& events, absl::Time now);
// Any other kind: its metadata, then the rest of it as YAML, then its events.
std::string DescribeGeneric(const api::KindInfo& kind, const google::protobuf::Message& obj,
                            const std::vector<api::Event>& events, absl::Time now);

}  // namespace mkube::cli
