// CronJob schedules: the five fields with ranges, steps, lists and names, cron's rule for the
// two day fields, the @ descriptors, time zones with their daylight-saving jumps, and the
// errors Kubernetes words for bad schedules and zones.
#include "api/cron.h"

#include <gtest/gtest.h>

namespace mkube::api {
namespace {

absl::Time Utc(int y, int mo, int d, int h, int mi, int s = 0) {
  return absl::FromCivil(absl::CivilSecond(y, mo, d, h, mi, s), absl::UTCTimeZone());
}

std::string Fmt(absl::Time t, const absl::TimeZone& zone = absl::UTCTimeZone()) {
  return absl::FormatTime("%Y-%m-%d %H:%M %a", t, zone);
}

// The next `n` times after `from`, on `zone`'s wall clock.
std::vector<std::string> Nexts(const std::string& spec, absl::Time from, int n,
                               const absl::TimeZone& zone = absl::UTCTimeZone()) {
  auto s = CronSchedule::Parse(spec);
  EXPECT_TRUE(s.ok()) << spec << ": " << s.status();
  std::vector<std::string> out;
  if (!s.ok()) return out;
  for (absl::Time t = from; n-- > 0;) {
    t = s->Next(t, zone);
    out.push_back(t == absl::InfiniteFuture() ? "never" : Fmt(t, zone));
  }
  return out;
}

std::string ParseError(const std::string& spec) {
  auto s = CronSchedule::Parse(spec);
  return s.ok() ? "ok" : std::string(s.status().message());
}

TEST(CronScheduleTest, FieldsNameTheTimesThatFollow) {
  const absl::Time from = Utc(2026, 12, 2, 10, 7, 30);  // a Wednesday
  struct Case {
    std::string spec;
    std::vector<std::string> want;
  };
  const std::vector<Case> cases = {
      {"* * * * *", {"2026-12-02 10:08 Wed", "2026-12-02 10:09 Wed"}},
      {"*/15 * * * *", {"2026-12-02 10:15 Wed", "2026-12-02 10:30 Wed"}},
      {"5/20 * * * *", {"2026-12-02 10:25 Wed", "2026-12-02 10:45 Wed", "2026-12-02 11:05 Wed"}},
      {"0 9-10,14 * * *", {"2026-12-02 14:00 Wed", "2026-12-03 09:00 Thu", "2026-12-03 10:00 Thu"}},
      {"30 6 * * mon-FRI", {"2026-12-03 06:30 Thu", "2026-12-04 06:30 Fri", "2026-12-07 06:30 Mon"}},
      {"0 0 1 jan,jul *", {"2027-01-01 00:00 Fri", "2027-07-01 00:00 Thu"}},
      {"0 0 29 2 *", {"2028-02-29 00:00 Tue"}},
      {"0 0 30 2 *", {"never"}},
      {"? ? ? ? ?", {"2026-12-02 10:08 Wed"}},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(Nexts(c.spec, from, static_cast<int>(c.want.size())), c.want) << c.spec;
  }
}

TEST(CronScheduleTest, TwoRestrictedDayFieldsWidenEachOther) {
  const absl::Time from = Utc(2026, 12, 2, 10, 0);
  // The 5th, or any Friday.
  EXPECT_EQ(Nexts("0 0 5 * 5", from, 3),
            (std::vector<std::string>{"2026-12-04 00:00 Fri", "2026-12-05 00:00 Sat",
                                      "2026-12-11 00:00 Fri"}));
  // A star in one of them: both must match (the 5th when it is a Friday... or every 5th).
  EXPECT_EQ(Nexts("0 0 5 * *", from, 1), (std::vector<std::string>{"2026-12-05 00:00 Sat"}));
  EXPECT_EQ(Nexts("0 0 * * 5", from, 1), (std::vector<std::string>{"2026-12-04 00:00 Fri"}));
  // A stepped star is a restriction: the 1st, 11th, 21st and 31st, or Fridays.
  EXPECT_EQ(Nexts("0 0 */10 * fri", from, 3),
            (std::vector<std::string>{"2026-12-04 00:00 Fri", "2026-12-11 00:00 Fri",
                                      "2026-12-18 00:00 Fri"}));
}

TEST(CronScheduleTest, Descriptors) {
  const absl::Time from = Utc(2026, 12, 2, 10, 7, 30);
  EXPECT_EQ(Nexts("@hourly", from, 1), (std::vector<std::string>{"2026-12-02 11:00 Wed"}));
  EXPECT_EQ(Nexts("@daily", from, 1), (std::vector<std::string>{"2026-12-03 00:00 Thu"}));
  EXPECT_EQ(Nexts("@midnight", from, 1), (std::vector<std::string>{"2026-12-03 00:00 Thu"}));
  EXPECT_EQ(Nexts("@weekly", from, 1), (std::vector<std::string>{"2026-12-06 00:00 Sun"}));
  EXPECT_EQ(Nexts("@monthly", from, 1), (std::vector<std::string>{"2027-01-01 00:00 Fri"}));
  EXPECT_EQ(Nexts("@yearly", from, 1), (std::vector<std::string>{"2027-01-01 00:00 Fri"}));
  EXPECT_EQ(Nexts("@annually", from, 1), (std::vector<std::string>{"2027-01-01 00:00 Fri"}));
  auto every = CronSchedule::Parse("@every 1m30s");
  ASSERT_TRUE(every.ok());
  EXPECT_EQ(every->Next(from, absl::UTCTimeZone()), Utc(2026, 12, 2, 10, 9, 0));
  auto fast = CronSchedule::Parse("@every 10ms");
  ASSERT_TRUE(fast.ok());
  EXPECT_EQ(fast->Next(from, absl::UTCTimeZone()), Utc(2026, 12, 2, 10, 7, 31))
      << "at least a second";
}

TEST(CronScheduleTest, ATimeZoneReadsTheScheduleOnItsWallClock) {
  auto paris = LoadCronTimeZone("Europe/Paris");
  ASSERT_TRUE(paris.ok()) << paris.status();
  auto s = CronSchedule::Parse("0 9 * * *");
  ASSERT_TRUE(s.ok());
  // 09:00 in Paris is 08:00 UTC in winter, 07:00 UTC in summer.
  EXPECT_EQ(s->Next(Utc(2026, 12, 2, 10, 0), *paris), Utc(2026, 12, 3, 8, 0));
  EXPECT_EQ(s->Next(Utc(2026, 7, 2, 10, 0), *paris), Utc(2026, 7, 3, 7, 0));
  // 02:30 does not exist on 2026-03-29 in Paris (02:00 jumps to 03:00): it runs at 03:30.
  auto night = CronSchedule::Parse("30 2 * * *");
  ASSERT_TRUE(night.ok());
  EXPECT_EQ(Fmt(night->Next(Utc(2026, 3, 28, 12, 0), *paris), *paris), "2026-03-29 03:30 Sun");
  // 02:30 happens twice on 2026-10-25 (03:00 goes back to 02:00): it runs once, the first.
  const absl::Time first = night->Next(Utc(2026, 10, 24, 12, 0), *paris);
  EXPECT_EQ(first, Utc(2026, 10, 25, 0, 30));
  EXPECT_EQ(Fmt(night->Next(first, *paris), *paris), "2026-10-26 02:30 Mon");
}

TEST(CronScheduleTest, BadSchedulesAreWordedAsKubernetesWordsThem) {
  EXPECT_EQ(ParseError(""), "empty spec string");
  EXPECT_EQ(ParseError("* * *"), "expected exactly 5 fields, found 3: [* * *]");
  EXPECT_EQ(ParseError("0 0 * * * *"), "expected exactly 5 fields, found 6: [0 0 * * * *]");
  EXPECT_EQ(ParseError("61 * * * *"), "end of range (61) above maximum (59): 61");
  EXPECT_EQ(ParseError("* * 0 * *"), "beginning of range (0) below minimum (1): 0");
  EXPECT_EQ(ParseError("* 5-2 * * *"), "beginning of range (5) beyond end of range (2): 5-2");
  EXPECT_EQ(ParseError("*/0 * * * *"), "step of range should be a positive number: */0");
  EXPECT_EQ(ParseError("1-2-3 * * * *"), "too many hyphens: 1-2-3");
  EXPECT_EQ(ParseError("*/2/3 * * * *"), "too many slashes: */2/3");
  EXPECT_EQ(ParseError("x * * * *"),
            "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax");
  EXPECT_EQ(ParseError("* * * * 7"), "end of range (7) above maximum (6): 7");
  EXPECT_EQ(ParseError("@fortnightly"), "unrecognized descriptor: @fortnightly");
  EXPECT_EQ(ParseError("@every soon"),
            "failed to parse duration @every soon: time: invalid duration \"soon\"");
  EXPECT_EQ(ParseError("0 12 * * sun,wed"), "ok");
}

TEST(CronScheduleTest, TimeZonesMustBePlainIanaNames) {
  auto error = [](const std::string& name) {
    auto z = LoadCronTimeZone(name);
    return z.ok() ? "ok" : std::string(z.status().message());
  };
  EXPECT_EQ(error("UTC"), "ok");
  EXPECT_EQ(error("America/New_York"), "ok");
  EXPECT_EQ(error(""), "timeZone must be nil or non-empty string");
  EXPECT_EQ(error("Europe/Pariss"), "unknown time zone Europe/Pariss");
  EXPECT_EQ(error("../../etc/passwd"), "unknown time zone ../../etc/passwd");
  EXPECT_EQ(error("/etc/localtime"), "unknown time zone /etc/localtime");
  EXPECT_EQ(error("Local"),
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones");
}

}  // namespace
}  // namespace mkube::api
