#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/runtime/image.h"
#include "client/clock.h"

// Unused images removed when the node's disk fills, as the kubelet's image garbage collector
// does: when the image filesystem's usage reaches the high threshold, the images no container
// uses are removed, least recently used first and none younger than the minimum age, until
// usage is down to the low threshold; with a maximum age, images unused for longer go too.
namespace mkube::agent::runtime {

struct ImageGcPolicy {
  int high_threshold_percent = 85;  // 100: never for disk usage
  int low_threshold_percent = 80;
  absl::Duration min_age = absl::Minutes(2);
  absl::Duration max_age = absl::ZeroDuration();  // zero: no maximum
  absl::Duration period = absl::Minutes(5);
};

// Each flag's error names it: thresholds 0-100, low not above high, no negative durations.
absl::Status Validate(const ImageGcPolicy& policy);

struct DiskUsage {
  int64_t capacity_bytes = 0;
  int64_t available_bytes = 0;
};
using DiskUsageFn = std::function<absl::StatusOr<DiskUsage>()>;
// The filesystem holding `path`, by statvfs.
DiskUsageFn FilesystemOf(std::string path);

class ImageGc {
 public:
  // `in_use`: the images the node's containers name (those of every pod it runs or stops).
  // `failed`: told each round's failure (the agent records it on its Node).
  ImageGc(ImageStore* images, std::function<std::vector<std::string>()> in_use, DiskUsageFn disk,
          client::Clock* clock, ImageGcPolicy policy,
          std::function<void(const std::string& reason, const std::string& message)> failed = {});

  struct Round {
    int64_t wanted_bytes = 0;  // to bring usage down to the low threshold
    int64_t freed_bytes = 0;
    std::vector<std::string> removed;  // each removed image's first name
  };
  // One look at the images and the disk.
  absl::StatusOr<Round> Collect() ABSL_LOCKS_EXCLUDED(mu_);

  // Collects every period until Stop.
  void Run() ABSL_LOCKS_EXCLUDED(mu_);
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Seen {
    absl::Time first_detected;
    absl::Time last_used;
  };
  // Removes `img`, counting it in `round` (unless a container has come to use it); false when
  // pulls under way held it off.
  bool Remove(const StoredImage& img, const char* why, Round* round);

  ImageStore* const images_;
  const std::function<std::vector<std::string>()> in_use_;
  const DiskUsageFn disk_;
  client::Clock* const clock_;
  const ImageGcPolicy policy_;
  const std::function<void(const std::string&, const std::string&)> failed_;
  absl::Mutex mu_;
  std::map<std::string, Seen> seen_ ABSL_GUARDED_BY(mu_);  // by digest
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace mkube::agent::runtime
