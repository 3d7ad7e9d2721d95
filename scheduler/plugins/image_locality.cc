#include "scheduler/plugins/image_locality.h"

#include <algorithm>
#include <string>
#include <vector>

namespace mkube::scheduler::plugins {
namespace {

constexpr int64_t kMiB = 1 << 20;
constexpr int64_t kMinThreshold = 23 * kMiB;
constexpr int64_t kMaxContainerThreshold = 1000 * kMiB;

std::string Normalized(const std::string& image) {
  const auto colon = image.rfind(':');
  const auto slash = image.rfind('/');
  if (colon == std::string::npos || (slash != std::string::npos && colon < slash)) {
    return image + ":latest";
  }
  return image;
}

// Each of the pod's images (one per container), with the share of nodes that have it.
struct Images : framework::CycleState::Data {
  struct Image {
    std::string name;
    double spread = 0;
  };
  std::vector<Image> images;
  int containers = 0;
};

}  // namespace

framework::Status ImageLocality::PreScore(framework::CycleState& state, const api::Pod& pod,
                                          const std::vector<const framework::NodeInfo*>&,
                                          const framework::Snapshot& snapshot) const {
  auto images = std::make_unique<Images>();
  const double total = std::max<size_t>(1, snapshot.nodes().size());
  auto add = [&](const api::Container& c) {
    ++images->containers;
    std::string name = Normalized(c.image());
    const int with = snapshot.NodesWithImage(name);
    if (with > 0) images->images.push_back({std::move(name), with / total});
  };
  for (const auto& c : pod.spec().init_containers()) add(c);
  for (const auto& c : pod.spec().containers()) add(c);
  if (images->images.empty()) return framework::Status::Skip();  // on no node: all score 0
  state.Write(kName, std::move(images));
  return {};
}

int64_t ImageLocality::Score(const framework::CycleState& state, const api::Pod&,
                             const framework::NodeInfo& node) const {
  const Images* pre = state.Read<Images>(kName);
  if (!pre || pre->containers == 0) return 0;
  int64_t sum = 0;
  for (const auto& image : pre->images) {
    auto it = node.images().find(image.name);
    if (it != node.images().end()) sum += static_cast<int64_t>(it->second * image.spread);
  }
  const int64_t max = kMaxContainerThreshold * pre->containers;
  sum = std::clamp(sum, kMinThreshold, max);
  return framework::kMaxNodeScore * (sum - kMinThreshold) / (max - kMinThreshold);
}

}  // namespace mkube::scheduler::plugins
