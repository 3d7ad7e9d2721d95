#include "scheduler/framework/resources.h"

#include <algorithm>

#include "api/quantity.h"

namespace mkube::scheduler::framework {
namespace {

void Add(const google::protobuf::Map<std::string, std::string>& amounts, ResourceList* to) {
  for (const auto& [name, text] : amounts) {
    if (auto q = api::Quantity::Parse(text); q.ok()) (*to)[name] += q->milli();
  }
}

}  // namespace

ResourceList PodRequests(const api::Pod& pod) {
  ResourceList sum;
  for (const auto& c : pod.spec().containers()) Add(c.resources().requests(), &sum);
  for (const auto& c : pod.spec().init_containers()) {
    ResourceList one;
    Add(c.resources().requests(), &one);
    for (const auto& [name, milli] : one) sum[name] = std::max(sum[name], milli);
  }
  Add(pod.spec().overhead(), &sum);
  return sum;
}

ResourceList Allocatable(const api::Node& node) {
  ResourceList out;
  Add(node.status().allocatable(), &out);
  return out;
}

}  // namespace mkube::scheduler::framework
