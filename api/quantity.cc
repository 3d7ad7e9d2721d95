#include "api/quantity.h"

#include <cctype>

#include "fmt/format.h"

namespace mkube::api {
namespace {

constexpr int64_t kMax = INT64_MAX / 10;

absl::Status Bad(std::string_view text) {
  return absl::InvalidArgumentError(fmt::format("{}: {}", text, kQuantityFormat));
}

absl::Status TooLarge(std::string_view text) {
  return absl::OutOfRangeError(fmt::format("{}: quantity too large", text));
}

// The number before the suffix, as an integer with `frac` digits after the point.
struct Mantissa {
  __int128 value = 0;
  int frac = 0;
  size_t length = 0;  // characters read
};

absl::StatusOr<Mantissa> ParseMantissa(std::string_view s, std::string_view text) {
  Mantissa m;
  bool point = false, digits = false;
  size_t i = 0;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '.') {
      if (point) return Bad(text);
      point = true;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      digits = true;
      if (m.value > kMax) return TooLarge(text);
      m.value = m.value * 10 + (c - '0');
      if (point) ++m.frac;
    } else {
      break;
    }
  }
  if (!digits) return Bad(text);
  m.length = i;
  return m;
}

// What a suffix multiplies by: 2^binary_shift (Ki ... Ei) or 10^decimal_exp (n ... E, e<N>).
struct Scale {
  int64_t binary_shift = 0;
  int decimal_exp = 0;
};

absl::StatusOr<Scale> ParseSuffix(std::string_view suffix, std::string_view text) {
  Scale scale;
  int64_t& binary_shift = scale.binary_shift;
  int& decimal_exp = scale.decimal_exp;
  if (suffix.empty()) {
  } else if (suffix.size() == 2 && suffix[1] == 'i') {
    switch (suffix[0]) {
      case 'K': binary_shift = 10; break;
      case 'M': binary_shift = 20; break;
      case 'G': binary_shift = 30; break;
      case 'T': binary_shift = 40; break;
      case 'P': binary_shift = 50; break;
      case 'E': binary_shift = 60; break;
      default: return Bad(text);
    }
  } else if (suffix.size() == 1) {
    switch (suffix[0]) {
      case 'n': decimal_exp = -9; break;
      case 'u': decimal_exp = -6; break;
      case 'm': decimal_exp = -3; break;
      case 'k': decimal_exp = 3; break;
      case 'M': decimal_exp = 6; break;
      case 'G': decimal_exp = 9; break;
      case 'T': decimal_exp = 12; break;
      case 'P': decimal_exp = 15; break;
      case 'E': decimal_exp = 18; break;
      default: return Bad(text);
    }
  } else if (suffix[0] == 'e' || suffix[0] == 'E') {
    std::string_view e = suffix.substr(1);
    bool neg_e = false;
    if (!e.empty() && (e[0] == '+' || e[0] == '-')) {
      neg_e = e[0] == '-';
      e.remove_prefix(1);
    }
    if (e.empty() || e.size() > 3) return Bad(text);
    int v = 0;
    for (char c : e) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return Bad(text);
      v = v * 10 + (c - '0');
    }
    decimal_exp = neg_e ? -v : v;
  } else {
    return Bad(text);
  }
  return scale;
}

// milli = mantissa * 10^(decimal_exp + 3 - frac) * 2^binary_shift, rounded up.
absl::StatusOr<int64_t> Milli(const Mantissa& m, const Scale& scale, std::string_view text) {
  __int128 value = m.value;
  int exp10 = scale.decimal_exp + 3 - m.frac;
  const __int128 limit = static_cast<__int128>(INT64_MAX);
  for (int k = 0; k < scale.binary_shift; ++k) {
    value *= 2;
    if (value > limit * 1000000000LL) return TooLarge(text);
  }
  for (; exp10 > 0; --exp10) {
    value *= 10;
    if (value > limit) return TooLarge(text);
  }
  for (; exp10 < 0; ++exp10) {
    value = (value + 9) / 10;  // round up
  }
  if (value > limit) return TooLarge(text);
  return static_cast<int64_t>(value);
}

}  // namespace

absl::StatusOr<Quantity> Quantity::Parse(std::string_view text) {
  std::string_view s = text;
  if (s.empty()) return Bad(text);
  bool negative = false;
  if (s[0] == '+' || s[0] == '-') {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  absl::StatusOr<Mantissa> mantissa = ParseMantissa(s, text);
  if (!mantissa.ok()) return mantissa.status();
  // value = mantissa * 10^-frac * base^exp, computed in milli-units.
  absl::StatusOr<Scale> scale = ParseSuffix(s.substr(mantissa->length), text);
  if (!scale.ok()) return scale.status();
  absl::StatusOr<int64_t> milli = Milli(*mantissa, *scale, text);
  if (!milli.ok()) return milli.status();
  return Quantity(negative ? -*milli : *milli);
}

}  // namespace mkube::api
