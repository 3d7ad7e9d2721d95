#include "controller/internal/int_or_percent.h"

#include <string>

#include "absl/strings/numbers.h"

namespace mkube::controller {

int32_t Scaled(const api::IntOrString& value, int32_t total, bool round_up) {
  if (value.has_int_value()) return value.int_value();
  const std::string& s = value.string_value();
  int32_t percent = 0;
  if (s.empty() || s.back() != '%' || !absl::SimpleAtoi(s.substr(0, s.size() - 1), &percent)) {
    return 0;
  }
  const int64_t scaled = static_cast<int64_t>(percent) * total;
  return static_cast<int32_t>(round_up ? (scaled + 99) / 100 : scaled / 100);
}

}  // namespace mkube::controller
