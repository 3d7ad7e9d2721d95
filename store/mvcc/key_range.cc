#include "store/mvcc/key_range.h"

namespace mkube::store::mvcc {

bool KeyRange::Overlaps(const KeyRange& o) const {
  if (empty() || o.empty()) return false;
  if (single()) return o.Contains(begin_);
  if (o.single()) return Contains(o.begin_);
  // Two intervals overlap when each starts before the other ends.
  bool this_starts_before_o_ends = o.unbounded() || begin_ < o.end_;
  bool o_starts_before_this_ends = unbounded() || o.begin_ < end_;
  return this_starts_before_o_ends && o_starts_before_this_ends;
}

}  // namespace mkube::store::mvcc
