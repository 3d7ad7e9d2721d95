#pragma once

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace mkube::api {

// A CronJob's schedule, read as Kubernetes reads it (the standard five-field cron format):
// minute (0-59), hour (0-23), day of month (1-31), month (1-12 or jan-dec), day of week
// (0-6 or sun-sat); each field `*`, `?`, a value, a range `a-b`, a step `*/n`, `a/n` or
// `a-b/n`, or a list of those; or one of @yearly, @annually, @monthly, @weekly, @daily,
// @midnight, @hourly and `@every <duration>`. When both day fields are restricted a day
// matching either one runs, as in cron. Errors are worded as Kubernetes words them.
class CronSchedule {
 public:
  static absl::StatusOr<CronSchedule> Parse(std::string_view spec);

  // The first time strictly after `t` that the schedule names, read on the wall clock of
  // `zone`; InfiniteFuture() when none comes within five years (say, "0 0 30 2 *").
  absl::Time Next(absl::Time t, const absl::TimeZone& zone) const;

 private:
  bool DayMatches(int day, int weekday) const;

  // One bit per allowed value; kStar marks a field written as `*` or `?`.
  uint64_t minutes_ = 0, hours_ = 0, days_ = 0, months_ = 0, weekdays_ = 0;
  absl::Duration every_ = absl::ZeroDuration();  // @every: a constant delay instead
};

// The zone a CronJob's spec.timeZone names. Refuses an empty name, "Local" and what is not
// a plain IANA name (nothing that could reach outside the zone database), with Kubernetes'
// words. A CronJob without the field runs on this process's local zone.
absl::StatusOr<absl::TimeZone> LoadCronTimeZone(std::string_view name);

}  // namespace mkube::api
