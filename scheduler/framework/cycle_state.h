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

  // Plugins whose PreFilter said Skip: their Filter is not called in this cycle (as
  // kube-scheduler's SkipFilterPlugins). A plugin is known by its address as a Plugin.
  void SkipFilter(const void* plugin) { skipped_filters_.push_back(plugin); }
  bool SkipsFilter(const void* plugin) const {
    for (const void* p : skipped_filters_) {
      if (p == plugin) return true;
    }
    return false;
  }

 private:
  std::vector<std::pair<std::string, std::unique_ptr<Data>>> data_;
  std::vector<const void*> skipped_filters_;
};

}  // namespace mkube::scheduler::framework
