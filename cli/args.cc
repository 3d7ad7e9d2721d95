#include "cli/args.h"

#include "absl/strings/numbers.h"
#include "fmt/format.h"

namespace mkube::cli {

absl::StatusOr<std::chrono::seconds> ParseDuration(const std::string& text,
                                                   const std::string& flag) {
  if (text.empty() || text == "0") return std::chrono::seconds(0);
  size_t end = 0;
  while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
  int64_t n = -1;
  if (end == 0 || end > 12 || !absl::SimpleAtoi(text.substr(0, end), &n)) n = -1;
  const std::string unit = text.substr(end);
  if (n >= 0 && (unit.empty() || unit == "s")) return std::chrono::seconds(n);
  if (n >= 0 && unit == "m") return std::chrono::seconds(n * 60);
  if (n >= 0 && unit == "h") return std::chrono::seconds(n * 3600);
  return absl::InvalidArgumentError(fmt::format(
      "invalid argument \"{}\" for \"{}\" flag: time: invalid duration \"{}\"", text, flag, text));
}

}  // namespace mkube::cli
