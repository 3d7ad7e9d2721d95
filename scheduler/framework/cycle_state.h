#pragma once

#include <map>
#include <memory>
#include <string>

namespace mkube::scheduler::framework {

// Scratch data of one scheduling cycle for one pod: what a plugin computes once in PreFilter
// (or PreScore) and reads for every node in Filter (or Score). Written by one thread; read
// by the filters, which may run in parallel, only after.
class CycleState {
 public:
  struct Data {
    virtual ~Data() = default;
  };
  void Write(const std::string& key, std::unique_ptr<Data> data) { data_[key] = std::move(data); }
  // The data of `key` as T, or null.
  template <typename T>
  const T* Read(const std::string& key) const {
    auto it = data_.find(key);
    return it == data_.end() ? nullptr : dynamic_cast<const T*>(it->second.get());
  }

 private:
  std::map<std::string, std::unique_ptr<Data>> data_;
};

}  // namespace mkube::scheduler::framework
