#include "agent/runtime/image_gc.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <tuple>

#include "absl/strings/str_join.h"
#include "base/log.h"
#include "base/status.h"
#include "fmt/format.h"

namespace mkube::agent::runtime {
namespace {

spdlog::logger& Log() {
  static spdlog::logger& log = log::Logger("image-gc");
  return log;
}

}  // namespace

absl::Status Validate(const ImageGcPolicy& p) {
  auto percent = [](int v, const char* flag) {
    return v < 0 || v > 100 ? absl::InvalidArgumentError(
                                  fmt::format("{} must be from 0 to 100, not {}", flag, v))
                            : absl::OkStatus();
  };
  if (auto st = percent(p.high_threshold_percent, "--image-gc-high-threshold"); !st.ok()) return st;
  if (auto st = percent(p.low_threshold_percent, "--image-gc-low-threshold"); !st.ok()) return st;
  if (p.low_threshold_percent > p.high_threshold_percent) {
    return absl::InvalidArgumentError(fmt::format(
        "--image-gc-low-threshold ({}) must not be above --image-gc-high-threshold ({})",
        p.low_threshold_percent, p.high_threshold_percent));
  }
  if (p.min_age < absl::ZeroDuration() || p.max_age < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "--minimum-image-ttl-duration and --image-maximum-gc-age must not be negative");
  }
  if (p.max_age > absl::ZeroDuration() && p.max_age < p.min_age) {
    return absl::InvalidArgumentError(
        "--image-maximum-gc-age must not be below --minimum-image-ttl-duration");
  }
  if (p.period <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--image-gc-period must be positive");
  }
  return absl::OkStatus();
}

DiskUsageFn FilesystemOf(std::string path) {
  return [path = std::move(path)]() -> absl::StatusOr<DiskUsage> {
    struct statvfs st {};
    if (statvfs(path.c_str(), &st) != 0) {
      return absl::InternalError(fmt::format("statvfs {}: {}", path, std::strerror(errno)));
    }
    return DiskUsage{.capacity_bytes = static_cast<int64_t>(st.f_blocks * st.f_frsize),
                     .available_bytes = static_cast<int64_t>(st.f_bavail * st.f_frsize)};
  };
}

ImageGc::ImageGc(ImageStore* images, std::function<std::vector<std::string>()> in_use,
                 DiskUsageFn disk, client::Clock* clock, ImageGcPolicy policy,
                 std::function<void(const std::string&, const std::string&)> failed)
    : images_(images),
      in_use_(std::move(in_use)),
      disk_(std::move(disk)),
      clock_(clock),
      policy_(policy),
      failed_(std::move(failed)) {}

bool ImageGc::Remove(const StoredImage& img, const char* why, Round* round) {
  auto freed = images_->Remove(img.digest, in_use_);
  if (freed.status().code() == absl::StatusCode::kFailedPrecondition) return true;
  if (!freed.ok()) {
    Log().info("image garbage collection waits for the next round: {}",
               std::string(freed.status().message()));
    return false;
  }
  const std::string name = img.names.empty() ? img.digest : img.names[0];
  Log().info("removed image {} ({}; {} bytes freed): {}", name, img.digest, *freed, why);
  round->freed_bytes += *freed;
  round->removed.push_back(name);
  return true;
}

absl::StatusOr<ImageGc::Round> ImageGc::Collect() {
  const absl::Time now = clock_->Now();
  const std::set<std::string> used = images_->DigestsOf(in_use_());
  std::vector<StoredImage> stored = images_->StoredImages();
  absl::MutexLock lock(&mu_);
  // What the node holds now, when each was first seen and last used.
  std::map<std::string, Seen> seen;
  for (const auto& img : stored) {
    auto it = seen_.find(img.digest);
    Seen s = it == seen_.end() ? Seen{now, now} : it->second;
    if (used.count(img.digest)) s.last_used = now;
    seen[img.digest] = s;
  }
  seen_ = std::move(seen);
  // The candidates: unused, least recently used first (then the first seen).
  std::vector<std::tuple<absl::Time, absl::Time, const StoredImage*>> ranked;
  for (const auto& img : stored) {
    if (used.count(img.digest)) continue;
    const Seen& s = seen_[img.digest];
    ranked.emplace_back(s.last_used, s.first_detected, &img);
  }
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return std::tie(std::get<0>(a), std::get<1>(a)) < std::tie(std::get<0>(b), std::get<1>(b));
  });
  std::vector<const StoredImage*> unused;
  for (const auto& r : ranked) unused.push_back(std::get<2>(r));
  Round round;
  std::vector<const StoredImage*> left;
  for (const StoredImage* img : unused) {
    if (policy_.max_age > absl::ZeroDuration() &&
        now - seen_[img->digest].last_used > policy_.max_age) {
      if (!Remove(*img, "unused for longer than the maximum age", &round)) return round;
      seen_.erase(img->digest);
    } else {
      left.push_back(img);
    }
  }
  if (policy_.high_threshold_percent >= 100) return round;
  MKUBE_ASSIGN_OR_RETURN(DiskUsage disk, disk_());
  if (disk.capacity_bytes <= 0) return round;
  const int64_t usage_percent = 100 - disk.available_bytes * 100 / disk.capacity_bytes;
  if (usage_percent < policy_.high_threshold_percent) return round;
  round.wanted_bytes =
      disk.capacity_bytes * (100 - policy_.low_threshold_percent) / 100 - disk.available_bytes;
  const std::string why = fmt::format("disk usage {}% is at or over the high threshold {}%",
                                      usage_percent, policy_.high_threshold_percent);
  int64_t freed = 0;
  for (const StoredImage* img : left) {
    if (freed >= round.wanted_bytes) break;
    if (now - seen_[img->digest].first_detected < policy_.min_age) continue;
    const int64_t before = round.freed_bytes;
    if (!Remove(*img, why.c_str(), &round)) return round;  // pulls under way: next round
    freed += round.freed_bytes - before;
    seen_.erase(img->digest);
  }
  if (freed < round.wanted_bytes) {
    const std::string message = fmt::format(
        "Failed to garbage collect required amount of images. Attempted to free {} bytes, but "
        "only found {} bytes eligible to free.",
        round.wanted_bytes, freed);
    if (failed_) failed_("FreeDiskSpaceFailed", message);
    return absl::ResourceExhaustedError(message);
  }
  return round;
}

void ImageGc::Run() {
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
      if (clock_->AwaitWithTimeout(&mu_, absl::Condition(&stopping), policy_.period)) return;
    }
    if (auto round = Collect(); !round.ok()) {
      Log().warn("image garbage collection failed: {}", std::string(round.status().message()));
      if (failed_ && round.status().code() != absl::StatusCode::kResourceExhausted) {
        failed_("ImageGCFailed", std::string(round.status().message()));
      }
    }
  }
}

void ImageGc::Stop() {
  absl::MutexLock lock(&mu_);
  stopping_ = true;
}

}  // namespace mkube::agent::runtime
