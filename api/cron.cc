#include "api/cron.h"

#include <array>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "base/status.h"
#include "fmt/format.h"

namespace mkube::api {
namespace {

constexpr uint64_t kStar = uint64_t{1} << 63;

struct Bounds {
  int min, max;
  const std::array<const char*, 12>* names;  // value min + i is names[i]; null: none
};

constexpr std::array<const char*, 12> kMonthNames = {"jan", "feb", "mar", "apr", "may", "jun",
                                                     "jul", "aug", "sep", "oct", "nov", "dec"};
constexpr std::array<const char*, 12> kDayNames = {"sun", "mon", "tue", "wed", "thu", "fri",
                                                   "sat", nullptr, nullptr, nullptr, nullptr,
                                                   nullptr};
constexpr Bounds kMinutes{0, 59, nullptr}, kHours{0, 23, nullptr}, kDays{1, 31, nullptr},
    kMonths{1, 12, &kMonthNames}, kWeekdays{0, 6, &kDayNames};

std::string S(absl::string_view v) { return std::string(v); }

uint64_t Bits(int min, int max, int step) {
  uint64_t bits = 0;
  for (int i = min; i <= max; i += step) bits |= uint64_t{1} << i;
  return bits;
}

uint64_t All(const Bounds& b) { return Bits(b.min, b.max, 1) | kStar; }

absl::StatusOr<int> ParseInt(absl::string_view s) {
  int n = 0;
  if (s.empty() || !absl::SimpleAtoi(s, &n)) {
    return absl::InvalidArgumentError(
        fmt::format("failed to parse int from {}: strconv.Atoi: parsing \"{}\": invalid syntax",
                    S(s), S(s)));
  }
  if (n < 0) {
    return absl::InvalidArgumentError(fmt::format("negative number ({}) not allowed: {}", n, S(s)));
  }
  return n;
}

absl::StatusOr<int> ParseIntOrName(absl::string_view s, const Bounds& b) {
  if (b.names) {
    const std::string lower = absl::AsciiStrToLower(s);
    for (size_t i = 0; i < b.names->size(); ++i) {
      if ((*b.names)[i] && lower == (*b.names)[i]) return b.min + static_cast<int>(i);
    }
  }
  return ParseInt(s);
}

// One comma-separated part of a field: `*`, `?`, `a`, `a-b`, with an optional `/step`.
absl::StatusOr<uint64_t> ParseRange(absl::string_view expr, const Bounds& b) {
  std::vector<absl::string_view> range_and_step = absl::StrSplit(expr, '/');
  std::vector<absl::string_view> low_and_high = absl::StrSplit(range_and_step[0], '-');
  const bool single = low_and_high.size() == 1;
  int start, end;
  uint64_t extra = 0;
  if (low_and_high[0] == "*" || low_and_high[0] == "?") {
    start = b.min;
    end = b.max;
    extra = kStar;
  } else {
    MKUBE_ASSIGN_OR_RETURN(auto s, ParseIntOrName(low_and_high[0], b));
    start = end = s;
    if (low_and_high.size() == 2) {
      MKUBE_ASSIGN_OR_RETURN(auto e, ParseIntOrName(low_and_high[1], b));
      end = e;
    } else if (low_and_high.size() > 2) {
      return absl::InvalidArgumentError(fmt::format("too many hyphens: {}", S(expr)));
    }
  }
  int step = 1;
  if (range_and_step.size() == 2) {
    MKUBE_ASSIGN_OR_RETURN(step, ParseInt(range_and_step[1]));
    if (single) end = b.max;  // "a/n" runs from a to the end
    if (step > 1) extra = 0;
  } else if (range_and_step.size() > 2) {
    return absl::InvalidArgumentError(fmt::format("too many slashes: {}", S(expr)));
  }
  if (start < b.min) {
    return absl::InvalidArgumentError(
        fmt::format("beginning of range ({}) below minimum ({}): {}", start, b.min, S(expr)));
  }
  if (end > b.max) {
    return absl::InvalidArgumentError(
        fmt::format("end of range ({}) above maximum ({}): {}", end, b.max, S(expr)));
  }
  if (start > end) {
    return absl::InvalidArgumentError(
        fmt::format("beginning of range ({}) beyond end of range ({}): {}", start, end, S(expr)));
  }
  if (step == 0) {
    return absl::InvalidArgumentError(
        fmt::format("step of range should be a positive number: {}", S(expr)));
  }
  return Bits(start, end, step) | extra;
}

absl::StatusOr<uint64_t> ParseField(absl::string_view field, const Bounds& b) {
  uint64_t bits = 0;
  for (absl::string_view part : absl::StrSplit(field, ',')) {
    MKUBE_ASSIGN_OR_RETURN(auto r, ParseRange(part, b));
    bits |= r;
  }
  return bits;
}

}  // namespace

absl::StatusOr<CronSchedule> CronSchedule::Parse(std::string_view text) {
  const absl::string_view spec(text.data(), text.size());
  std::vector<absl::string_view> fields =
      absl::StrSplit(spec, absl::ByAnyChar(" \t\n\r\v\f"), absl::SkipEmpty());
  if (fields.empty()) return absl::InvalidArgumentError("empty spec string");
  CronSchedule s;
  if (fields[0].front() == '@') {
    const absl::string_view d = absl::StripAsciiWhitespace(spec);
    s.minutes_ = 1;
    s.hours_ = 1;
    s.days_ = All(kDays);
    s.months_ = All(kMonths);
    s.weekdays_ = All(kWeekdays);
    if (d == "@yearly" || d == "@annually") {
      s.days_ = uint64_t{1} << 1;
      s.months_ = uint64_t{1} << 1;
    } else if (d == "@monthly") {
      s.days_ = uint64_t{1} << 1;
    } else if (d == "@weekly") {
      s.weekdays_ = 1;
    } else if (d == "@daily" || d == "@midnight") {
    } else if (d == "@hourly") {
      s.hours_ = All(kHours);
    } else if (absl::StartsWith(d, "@every ")) {
      const absl::string_view delay = absl::StripAsciiWhitespace(d.substr(7));
      absl::Duration every;
      if (delay.find("inf") != absl::string_view::npos || !absl::ParseDuration(delay, &every)) {
        return absl::InvalidArgumentError(fmt::format(
            "failed to parse duration {}: time: invalid duration \"{}\"", S(d), S(delay)));
      }
      // Whole seconds, at least one.
      s.every_ = std::max(absl::Seconds(1), absl::Trunc(every, absl::Seconds(1)));
    } else {
      return absl::InvalidArgumentError(fmt::format("unrecognized descriptor: {}", S(d)));
    }
    return s;
  }
  if (fields.size() != 5) {
    return absl::InvalidArgumentError(fmt::format("expected exactly 5 fields, found {}: [{}]",
                                                  fields.size(), absl::StrJoin(fields, " ")));
  }
  uint64_t* const out[] = {&s.minutes_, &s.hours_, &s.days_, &s.months_, &s.weekdays_};
  const Bounds* const bounds[] = {&kMinutes, &kHours, &kDays, &kMonths, &kWeekdays};
  for (int i = 0; i < 5; ++i) {
    MKUBE_ASSIGN_OR_RETURN(auto bits, ParseField(fields[i], *bounds[i]));
    *out[i] = bits;
  }
  return s;
}

bool CronSchedule::DayMatches(int day, int weekday) const {
  const bool dom = (days_ >> day) & 1;
  const bool dow = (weekdays_ >> weekday) & 1;
  // A field left as `*` does not widen the other: both must match. Two restricted fields
  // widen each other, as in cron.
  if ((days_ & kStar) || (weekdays_ & kStar)) return dom && dow;
  return dom || dow;
}

absl::Time CronSchedule::Next(absl::Time t, const absl::TimeZone& zone) const {
  if (every_ > absl::ZeroDuration()) {
    return absl::FromUnixSeconds(absl::ToUnixSeconds(t)) + every_;
  }
  // Walk the wall clock from the minute after t, skipping a whole month, day or hour at a
  // time when that field does not match.
  absl::CivilMinute c = absl::ToCivilMinute(t, zone) + 1;
  const absl::civil_year_t limit = c.year() + 5;
  while (c.year() <= limit) {
    if (!((months_ >> c.month()) & 1)) {
      c = absl::CivilMinute(absl::CivilMonth(c) + 1);
      continue;
    }
    const int weekday = (static_cast<int>(absl::GetWeekday(absl::CivilDay(c))) + 1) % 7;
    if (!DayMatches(c.day(), weekday)) {
      c = absl::CivilMinute(absl::CivilDay(c) + 1);
      continue;
    }
    if (!((hours_ >> c.hour()) & 1)) {
      c = absl::CivilMinute(absl::CivilHour(c) + 1);
      continue;
    }
    if (!((minutes_ >> c.minute()) & 1)) {
      c += 1;
      continue;
    }
    // A wall-clock time skipped by a daylight-saving jump runs at the same distance past
    // the jump; one that happens twice runs the first time.
    const absl::Time at = zone.At(c).pre;
    if (at > t) return at;
    c += 1;
  }
  return absl::InfiniteFuture();
}

absl::StatusOr<absl::TimeZone> LoadCronTimeZone(std::string_view text) {
  const absl::string_view name(text.data(), text.size());
  if (name.empty()) return absl::InvalidArgumentError("timeZone must be nil or non-empty string");
  for (absl::string_view part : absl::StrSplit(name, '/')) {
    bool ok = !part.empty() && part.size() <= 14 && part != "." && part != ".." &&
              part.front() != '-';
    for (char ch : part) {
      ok = ok && (absl::ascii_isalnum(static_cast<unsigned char>(ch)) || ch == '.' ||
                  ch == '-' || ch == '_' || ch == '+');
    }
    if (!ok) return absl::InvalidArgumentError(fmt::format("unknown time zone {}", S(name)));
  }
  if (absl::EqualsIgnoreCase(name, "Local")) {
    return absl::InvalidArgumentError(
        "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones");
  }
  absl::TimeZone zone;
  if (!absl::LoadTimeZone(S(name), &zone)) {
    return absl::InvalidArgumentError(fmt::format("unknown time zone {}", S(name)));
  }
  return zone;
}

}  // namespace mkube::api
