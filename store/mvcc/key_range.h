#pragma once

#include <string>
#include <string_view>

namespace mkube::store::mvcc {

// An etcd key interval: an empty end means the single key `begin`; an end of "\0" means every
// key from `begin` on; otherwise the half-open byte interval [begin, end).
class KeyRange {
 public:
  KeyRange(std::string_view begin, std::string_view end) : begin_(begin), end_(end) {}

  const std::string& begin() const { return begin_; }
  bool single() const { return end_.empty(); }
  bool unbounded() const { return end_.size() == 1 && end_[0] == '\0'; }
  // True when no key can be inside: end at or before begin.
  bool empty() const { return !single() && !unbounded() && end_ <= begin_; }

  bool Contains(std::string_view k) const {
    if (single()) return k == begin_;
    if (k < begin_) return false;
    return unbounded() || k < end_;
  }
  // True when k is past every key of the range in byte order.
  bool Past(std::string_view k) const {
    if (single()) return k > begin_;
    return !unbounded() && k >= end_;
  }
  bool Overlaps(const KeyRange& o) const;

 private:
  std::string begin_;
  std::string end_;
};

}  // namespace mkube::store::mvcc
