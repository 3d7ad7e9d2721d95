// The storage on the etcd v3 API, against mkube-store (in this process) and a real etcd (a
// process of its own; skipped where etcd is not installed): the suite every storage passes,
// and the watch cache on it, whose replay of the store's history relies on how etcd orders a
// watch's events.
#include "apiserver/storage/etcd_storage.h"

#include <filesystem>

#include "absl/synchronization/mutex.h"
#include "api/kinds.h"
#include "apiserver/cache/watch_cache.h"
#include "proto/api/core.pb.h"
#include "tests/apiserver/in_process_store.h"
#include "tests/apiserver/storage_suite.h"
#include "tests/util/store_process.h"

namespace mkube::testing {
namespace {

using apiserver::storage::EtcdStorage;

const StorageBackend kMkubeStore{
    .name = "mkube",
    .missing = [] { return std::string(); },
    .start = [](const std::string& dir) -> absl::StatusOr<ServedStorage> {
      auto store = StartInProcessStore(dir);
      if (!store.ok()) return store.status();
      ServedStorage served;
      served.storage = std::make_unique<EtcdStorage>((*store)->address());
      served.server = std::shared_ptr<store::server::StoreServer>(std::move(*store));
      return served;
    }};

const StorageBackend kEtcd{
    .name = "etcd",
    .missing = []() -> std::string {
      return std::filesystem::exists(EtcdPath()) ? "" : "etcd is not installed";
    },
    .start = [](const std::string& dir) -> absl::StatusOr<ServedStorage> {
      auto etcd = std::make_shared<EtcdProcess>(dir, dir + ".log");
      if (auto st = etcd->Start(); !st.ok()) return st;
      ServedStorage served;
      served.storage = std::make_unique<EtcdStorage>(etcd->address());
      served.server = std::move(etcd);
      return served;
    }};

INSTANTIATE_TEST_SUITE_P(Storages, StorageTest, ::testing::Values(kMkubeStore, kEtcd),
                         [](const auto& info) { return info.param.name; });

// What a watcher of the cache is sent, as "TYPE name".
class RecordingSink : public apiserver::cache::WatchSink {
 public:
  bool Push(const apiserver::cache::Event& e, bool) override {
    absl::MutexLock lock(&mu_);
    if (e.entry) events_.push_back(std::string(EventTypeName(e.type)) + " " + e.entry->name);
    return true;
  }
  void Close(const absl::Status&) override {}
  std::vector<std::string> events() const {
    absl::MutexLock lock(&mu_);
    return events_;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<std::string> events_ ABSL_GUARDED_BY(mu_);
};

class CacheOnStorageTest : public StorageTest {
 protected:
  int64_t PutPod(const std::string& name, const std::string& version) {
    api::Pod pod;
    pod.mutable_metadata()->set_name(name);
    pod.mutable_metadata()->set_namespace_("default");
    (*pod.mutable_metadata()->mutable_labels())["v"] = version;
    return Put("/registry/pods/default/" + name, pod.SerializeAsString());
  }
};

TEST_P(CacheOnStorageTest, TheCacheReplaysTheHistoryBeforeItsStartThenFollowsTheStore) {
  const int64_t first = PutPod("early", "1");
  PutPod("early", "2");
  const int64_t deleted = Write(apiserver::storage::DeleteKeyTxn("/registry/pods/default/early"));
  apiserver::cache::WatchCache cache(store_);
  ASSERT_TRUE(cache.Start().ok());
  ASSERT_TRUE(cache.WaitFor(deleted, std::chrono::seconds(10)).ok());
  auto markers = store_->List("/registry/~mkube/");
  ASSERT_TRUE(markers.ok()) << markers.status();
  EXPECT_EQ(markers->kvs_size(), 0) << "the replay's marker is gone";

  apiserver::cache::Filter pods;
  pods.kind = api::FindResource("pods");
  auto sink = std::make_shared<RecordingSink>();
  ASSERT_TRUE(cache.Watch(pods, first, false, sink).ok());
  EXPECT_EQ(sink->events(), (std::vector<std::string>{"MODIFIED early", "DELETED early"}));
  const int64_t late = PutPod("late", "1");
  ASSERT_TRUE(cache.WaitFor(late, std::chrono::seconds(10)).ok());
  EXPECT_EQ(sink->events(),
            (std::vector<std::string>{"MODIFIED early", "DELETED early", "ADDED late"}));
  cache.Stop();
}

INSTANTIATE_TEST_SUITE_P(Storages, CacheOnStorageTest, ::testing::Values(kMkubeStore, kEtcd),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace mkube::testing
