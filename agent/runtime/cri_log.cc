#include "agent/runtime/cri_log.h"

#include <cstdio>
#include <ctime>

namespace mkube::agent::runtime::crilog {
namespace {

constexpr int64_t kNanos = 1'000'000'000;

// Digits at s[at, at+n) as a number; false if any is not a digit.
bool Digits(std::string_view s, size_t at, size_t n, int* out) {
  if (at + n > s.size()) return false;
  int v = 0;
  for (size_t i = at; i < at + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

}  // namespace

std::string FormatTime(int64_t unix_nanos) {
  int64_t secs = unix_nanos / kNanos;
  int64_t nanos = unix_nanos % kNanos;
  if (nanos < 0) {
    nanos += kNanos;
    secs -= 1;
  }
  const time_t t = static_cast<time_t>(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long long>(nanos));
  return buf;
}

bool ParseTime(std::string_view s, int64_t* unix_nanos) {
  std::tm tm{};
  int year, mon, day, hour, min, sec;
  if (!Digits(s, 0, 4, &year) || s.size() < 19 || s[4] != '-' || !Digits(s, 5, 2, &mon) ||
      s[7] != '-' || !Digits(s, 8, 2, &day) || (s[10] != 'T' && s[10] != 't') ||
      !Digits(s, 11, 2, &hour) || s[13] != ':' || !Digits(s, 14, 2, &min) || s[16] != ':' ||
      !Digits(s, 17, 2, &sec)) {
    return false;
  }
  size_t at = 19;
  int64_t nanos = 0;
  if (at < s.size() && s[at] == '.') {
    int64_t scale = kNanos;
    size_t digits = 0;
    for (++at; at < s.size() && s[at] >= '0' && s[at] <= '9'; ++at, ++digits) {
      if (digits < 9) {
        scale /= 10;
        nanos += (s[at] - '0') * scale;
      }
    }
    if (digits == 0) return false;
  }
  int64_t offset = 0;
  if (at < s.size() && (s[at] == 'Z' || s[at] == 'z')) {
    ++at;
  } else if (at + 6 == s.size() && (s[at] == '+' || s[at] == '-') && s[at + 3] == ':') {
    int oh, om;
    if (!Digits(s, at + 1, 2, &oh) || !Digits(s, at + 4, 2, &om)) return false;
    offset = (s[at] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
    at += 6;
  } else {
    return false;
  }
  if (at != s.size() || mon < 1 || mon > 12 || day < 1 || day > 31 || hour > 23 || min > 59 ||
      sec > 60) {
    return false;
  }
  tm.tm_year = year - 1900;
  tm.tm_mon = mon - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = min;
  tm.tm_sec = sec;
  *unix_nanos = (static_cast<int64_t>(timegm(&tm)) - offset) * kNanos + nanos;
  return true;
}

std::string Entries(std::string_view data, std::string_view stream, int64_t unix_nanos) {
  const std::string head = FormatTime(unix_nanos) + " " + std::string(stream);
  std::string out;
  out.reserve(data.size() + 64);
  size_t from = 0;
  while (from < data.size()) {
    const size_t nl = data.find('\n', from);
    const bool full = nl != std::string_view::npos;
    const size_t end = full ? nl : data.size();
    out += head;
    out += full ? " F " : " P ";
    out.append(data.substr(from, end - from));
    out += '\n';
    from = full ? nl + 1 : end;
  }
  return out;
}

bool ParseEntry(std::string_view line, Entry* e) {
  const size_t t_end = line.find(' ');
  if (t_end == std::string_view::npos || !ParseTime(line.substr(0, t_end), &e->unix_nanos)) {
    return false;
  }
  const size_t s_end = line.find(' ', t_end + 1);
  if (s_end == std::string_view::npos || s_end + 2 > line.size()) return false;
  e->stream = line.substr(t_end + 1, s_end - t_end - 1);
  const char tag = line[s_end + 1];
  if ((tag != 'F' && tag != 'P') || (s_end + 2 < line.size() && line[s_end + 2] != ' ')) {
    return false;
  }
  e->partial = tag == 'P';
  e->content = s_end + 3 <= line.size() ? line.substr(s_end + 3) : std::string_view();
  return true;
}

void Decoder::Show(const Entry& e, std::string* out) {
  // A time below zero: not known (a line that is not an entry).
  if (done_ || (e.unix_nanos >= 0 && e.unix_nanos < options_.since_nanos)) return;
  std::string text;
  if (options_.timestamps && line_start_ && e.unix_nanos >= 0) text = FormatTime(e.unix_nanos) + " ";
  text.append(e.content);
  if (!e.partial) text += '\n';
  line_start_ = !e.partial;
  if (options_.limit_bytes >= 0 &&
      shown_ + static_cast<int64_t>(text.size()) >= options_.limit_bytes) {
    text.resize(static_cast<size_t>(options_.limit_bytes - shown_));
    done_ = true;
  }
  shown_ += static_cast<int64_t>(text.size());
  *out += text;
}

std::string Decoder::Feed(std::string_view bytes) {
  std::string out;
  pending_.append(bytes);
  size_t from = 0;
  for (size_t nl; !done_ && (nl = pending_.find('\n', from)) != std::string::npos; from = nl + 1) {
    const std::string_view line(pending_.data() + from, nl - from);
    Entry e;
    if (!ParseEntry(line, &e)) {
      // Not an entry: shown as it is, as a whole line written at no known time.
      e = Entry{.unix_nanos = -1, .content = line};
    }
    Show(e, &out);
  }
  pending_.erase(0, done_ ? pending_.size() : from);
  return out;
}

}  // namespace mkube::agent::runtime::crilog
