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

NonZero NonZeroRequests(const api::Pod& pod) {
  auto one = [](const api::Container& c) {
    ResourceList r;
    Add(c.resources().requests(), &r);
    NonZero n;
    auto cpu = r.find("cpu");
    n.cpu = cpu == r.end() ? kDefaultMilliCpuRequest : cpu->second;
    auto mem = r.find("memory");
    n.memory = mem == r.end() ? kDefaultMemoryRequest * 1000 : mem->second;
    return n;
  };
  NonZero sum;
  for (const auto& c : pod.spec().containers()) {
    const NonZero n = one(c);
    sum.cpu += n.cpu;
    sum.memory += n.memory;
  }
  for (const auto& c : pod.spec().init_containers()) {
    const NonZero n = one(c);
    sum.cpu = std::max(sum.cpu, n.cpu);
    sum.memory = std::max(sum.memory, n.memory);
  }
  ResourceList overhead;
  Add(pod.spec().overhead(), &overhead);
  sum.cpu += overhead["cpu"];
  sum.memory += overhead["memory"];
  return sum;
}

ResourceList Allocatable(const api::Node& node) {
  ResourceList out;
  Add(node.status().allocatable(), &out);
  return out;
}

}  // namespace mkube::scheduler::framework
