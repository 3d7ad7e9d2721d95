#pragma once

#include <cstdint>
#include <string>
#include <string_view>

// Container logs in the CRI's format, one entry a line:
//   2026-12-06T18:21:42.123456789Z stdout F hello
// the time the runtime read it (UTC, nanoseconds), the stream, F for an entry that ends its
// line or P for part of one still going on, and the bytes themselves. mkube-monitor writes
// it; the agent reads it back for `logs` with its timestamps, since and byte limits. Plain
// C++: the monitor links it statically.
namespace mkube::agent::runtime::crilog {

// "2026-12-06T18:21:42.123456789Z": nine digits always, as kubectl logs --timestamps shows.
std::string FormatTime(int64_t unix_nanos);
// The time FormatTime writes, or RFC 3339 with fewer digits or none; false if it is not one.
bool ParseTime(std::string_view text, int64_t* unix_nanos);

// What the container wrote on one stream, as entries: each line ended by '\n' a full entry,
// what follows the last one a partial entry (written at once, so a prompt shows).
std::string Entries(std::string_view data, std::string_view stream, int64_t unix_nanos);

struct Entry {
  int64_t unix_nanos = 0;
  std::string_view stream;
  bool partial = false;
  std::string_view content;
};
// One line of a log, without its '\n'; false when it is not an entry.
bool ParseEntry(std::string_view line, Entry* e);

struct ReadOptions {
  int64_t since_nanos = 0;   // entries written before this are left out
  bool timestamps = false;   // each line starts with its time and a space
  int64_t limit_bytes = -1;  // at most this much is shown (-1: no limit)
};

// A log read back as the container wrote it, fed in pieces as the file is read. A line that
// is not an entry (a log written before entries were) is shown as it is.
class Decoder {
 public:
  explicit Decoder(ReadOptions options) : options_(options) {}
  // The text that `bytes` (the log's next bytes) shows; an unfinished last line waits for
  // the rest.
  std::string Feed(std::string_view bytes);
  // The limit of bytes has been reached: nothing more will be shown.
  bool done() const { return done_; }

 private:
  void Show(const Entry& e, std::string* out);

  const ReadOptions options_;
  std::string pending_;  // the start of a line whose '\n' has not been read yet
  bool line_start_ = true;
  int64_t shown_ = 0;
  bool done_ = false;
};

}  // namespace mkube::agent::runtime::crilog
