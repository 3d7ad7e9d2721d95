#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace mkube::api {

// A Kubernetes resource quantity ("100m", "0.5", "128Mi", "1G", "2Gi", "1e3"), held exactly as
// a count of thousandths (milli-units), rounded up as Kubernetes does for anything finer.
// Covers up to about 9.2e15 units (8 PiB of bytes).
class Quantity {
 public:
  static absl::StatusOr<Quantity> Parse(std::string_view text);
  static Quantity FromMilli(int64_t milli) { return Quantity(milli); }
  static Quantity FromUnits(int64_t units) { return Quantity(units * 1000); }

  int64_t milli() const { return milli_; }
  // Whole units, rounded up (CPU cores, bytes).
  int64_t units() const { return milli_ >= 0 ? (milli_ + 999) / 1000 : -((-milli_) / 1000); }

  friend bool operator==(Quantity a, Quantity b) { return a.milli_ == b.milli_; }
  friend auto operator<=>(Quantity a, Quantity b) { return a.milli_ <=> b.milli_; }
  Quantity operator+(Quantity o) const { return Quantity(milli_ + o.milli_); }
  Quantity operator-(Quantity o) const { return Quantity(milli_ - o.milli_); }

 private:
  explicit Quantity(int64_t milli) : milli_(milli) {}
  int64_t milli_ = 0;
};

// Kubernetes' wording for a malformed quantity.
inline constexpr char kQuantityFormat[] =
    "quantities must match the regular expression "
    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

}  // namespace mkube::api
