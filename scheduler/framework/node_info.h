#pragma once

#include <memory>
#include <string>
#include <vector>

#include "proto/api/core.pb.h"

namespace mkube::scheduler::framework {

using PodPtr = std::shared_ptr<const api::Pod>;
using NodePtr = std::shared_ptr<const api::Node>;

// A node as one scheduling cycle sees it: the Node and the pods on it (bound, or assumed on
// it by this scheduler). Filters and scores read it; the scheduler's cache makes it.
struct NodeInfo {
  NodePtr node;
  std::vector<PodPtr> pods;

  const std::string& name() const { return node->metadata().name(); }
};

}  // namespace mkube::scheduler::framework
