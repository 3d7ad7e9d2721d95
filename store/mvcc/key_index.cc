#include "store/mvcc/key_index.h"

#include <algorithm>

namespace mkube::store::mvcc {

void KeyIndex::Add(std::string_view key, const IndexedVersion& v) {
  auto it = keys_.find(key);
  if (it == keys_.end()) it = keys_.emplace(std::string(key), Versions()).first;
  it->second.push_back(v);
}

const IndexedVersion* KeyIndex::At(const Versions& versions, int64_t rev) {
  if (versions.empty()) return nullptr;
  if (rev == 0 || versions.back().rev.main <= rev) return &versions.back();
  // The last version at or below rev.
  auto it = std::upper_bound(versions.begin(), versions.end(), rev,
                             [](int64_t r, const IndexedVersion& v) { return r < v.rev.main; });
  if (it == versions.begin()) return nullptr;
  return &*std::prev(it);
}

std::optional<IndexedVersion> KeyIndex::Get(std::string_view key, int64_t rev) const {
  auto it = keys_.find(key);
  if (it == keys_.end()) return std::nullopt;
  const IndexedVersion* v = At(it->second, rev);
  if (!v || v->deleted()) return std::nullopt;
  return *v;
}

std::optional<IndexedVersion> KeyIndex::Previous(std::string_view key, Revision before) const {
  auto it = keys_.find(key);
  if (it == keys_.end()) return std::nullopt;
  const Versions& versions = it->second;
  auto pos = std::lower_bound(versions.begin(), versions.end(), before,
                              [](const IndexedVersion& v, Revision r) { return v.rev < r; });
  if (pos == versions.begin()) return std::nullopt;
  return *std::prev(pos);
}

void KeyIndex::Range(const KeyRange& range, int64_t rev, Visitor visit) const {
  if (range.empty()) return;
  if (range.single()) {
    auto it = keys_.find(range.begin());
    if (it == keys_.end()) return;
    const IndexedVersion* v = At(it->second, rev);
    if (v && !v->deleted()) visit(it->first, *v);
    return;
  }
  for (auto it = keys_.lower_bound(range.begin()); it != keys_.end(); ++it) {
    if (range.Past(it->first)) break;
    const IndexedVersion* v = At(it->second, rev);
    if (!v || v->deleted()) continue;
    if (!visit(it->first, *v)) return;
  }
}

bool KeyIndex::Compact(int64_t target, std::vector<Revision>* removed,
                       std::optional<std::string>* resume, size_t max_keys) {
  auto it = *resume ? keys_.lower_bound(**resume) : keys_.begin();
  for (size_t done = 0; it != keys_.end(); ++done) {
    if (done == max_keys) {
      *resume = it->first;
      return false;
    }
    Versions& versions = it->second;
    // The newest version at or below target stays (the key's state as of target) ...
    auto keep = std::upper_bound(versions.begin(), versions.end(), target,
                                 [](int64_t r, const IndexedVersion& v) { return r < v.rev.main; });
    if (keep != versions.begin()) {
      --keep;
      // ... unless it is a deletion below target: then the key had no state to keep.
      if (keep->deleted() && keep->rev.main < target) ++keep;
    }
    for (auto v = versions.begin(); v != keep; ++v) removed->push_back(v->rev);
    versions.erase(versions.begin(), keep);
    if (versions.empty()) {
      it = keys_.erase(it);
    } else {
      ++it;
    }
  }
  return true;
}

}  // namespace mkube::store::mvcc
