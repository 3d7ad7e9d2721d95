#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mkube::scheduler::framework {

// Scratch data of one scheduling cycle for one pod: what a plugin computes once in PreFilter
// (or PreScore) and reads for every node in Filter (or Score). Written by one thread; read
// by the filters, which may run in parallel, only after.
class CycleState {
 public:
  struct Data {
    virtual ~Data() = default;
  };
  void Write(std::string_view key, std::unique_ptr<Data> data) {
    for (auto& [k, d] : data_) {
      if (k == key) {
        d = std::move(data);
        return;
      }
    }
    data_.emplace_back(std::string(key), std::move(data));
  }
  // The data of `key` as T, or null. Read for every node by every plugin: a few entries
  // looked through in place, no key built.
  template <typename T>
  const T* Read(std::string_view key) const {
    for (const auto& [k, d] : data_) {
      if (k == key) return dynamic_cast<const T*>(d.get());
    }
    return nullptr;
  }

 private:
  std::vector<std::pair<std::string, std::unique_ptr<Data>>> data_;
};

}  // namespace mkube::scheduler::framework
