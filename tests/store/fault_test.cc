// Disk faults: a write whose WAL cannot be written or synced fails, nothing of it is
// acknowledged or visible, reads keep working, and writes work again once the disk does.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "rocksdb/env.h"
#include "rocksdb/file_system.h"
#include "tests/store/store_fixture.h"

namespace mkube::store::mvcc {
namespace {

class FaultState {
 public:
  std::atomic<bool> fail_wal{false};   // appends and syncs fail: a full disk
  std::atomic<bool> fail_sync{false};  // only syncs fail: a failing disk
};

// What a full disk looks like to RocksDB: its POSIX file system marks ENOSPC retryable.
rocksdb::IOStatus DiskFull() {
  auto s = rocksdb::IOStatus::NoSpace("injected: no space left on device");
  s.SetRetryable(true);
  return s;
}

// Fails appends and syncs of WAL files while armed, as a full or failing disk would.
class FaultFile : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  FaultFile(std::unique_ptr<rocksdb::FSWritableFile> f, FaultState* state)
      : FSWritableFileOwnerWrapper(std::move(f)), state_(state) {}
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                           rocksdb::IODebugContext* d) override {
    if (state_->fail_wal) return DiskFull();
    return FSWritableFileOwnerWrapper::Append(data, o, d);
  }
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                           const rocksdb::DataVerificationInfo& v,
                           rocksdb::IODebugContext* d) override {
    if (state_->fail_wal) return DiskFull();
    return FSWritableFileOwnerWrapper::Append(data, o, v, d);
  }
  rocksdb::IOStatus Sync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* d) override {
    if (state_->fail_sync) return rocksdb::IOStatus::IOError("injected: sync failed");
    if (state_->fail_wal) return DiskFull();
    return FSWritableFileOwnerWrapper::Sync(o, d);
  }
  rocksdb::IOStatus Fsync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* d) override {
    if (state_->fail_sync) return rocksdb::IOStatus::IOError("injected: sync failed");
    if (state_->fail_wal) return DiskFull();
    return FSWritableFileOwnerWrapper::Fsync(o, d);
  }

 private:
  FaultState* state_;
};

class FaultFs : public rocksdb::FileSystemWrapper {
 public:
  FaultFs(std::shared_ptr<rocksdb::FileSystem> base, FaultState* state)
      : FileSystemWrapper(std::move(base)), state_(state) {}
  const char* Name() const override { return "FaultFs"; }

  rocksdb::IOStatus NewWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                                    std::unique_ptr<rocksdb::FSWritableFile>* r,
                                    rocksdb::IODebugContext* d) override {
    auto s = FileSystemWrapper::NewWritableFile(f, o, r, d);
    Wrap(f, r);
    return s;
  }
  rocksdb::IOStatus ReuseWritableFile(const std::string& f, const std::string& old,
                                      const rocksdb::FileOptions& o,
                                      std::unique_ptr<rocksdb::FSWritableFile>* r,
                                      rocksdb::IODebugContext* d) override {
    auto s = FileSystemWrapper::ReuseWritableFile(f, old, o, r, d);
    Wrap(f, r);
    return s;
  }

 private:
  void Wrap(const std::string& name, std::unique_ptr<rocksdb::FSWritableFile>* r) {
    if (*r && name.ends_with(".log")) *r = std::make_unique<FaultFile>(std::move(*r), state_);
  }
  FaultState* state_;
};

class FaultTest : public StoreFixture {
 protected:
  void SetUp() override {
    fs_ = std::make_shared<FaultFs>(rocksdb::FileSystem::Default(), &state_);
    env_ = rocksdb::NewCompositeEnv(fs_);
    StoreOptions options;
    options.env = env_.get();
    Open(options);
  }
  void TearDown() override { store_.reset(); }

  FaultState state_;
  std::shared_ptr<FaultFs> fs_;
  std::unique_ptr<rocksdb::Env> env_;
};

TEST_F(FaultTest, FailedWritesAreNotAcknowledgedAndReadsKeepWorking) {
  ASSERT_TRUE(Put("k", "before").ok());
  const int64_t rev = store_->Revision();

  state_.fail_wal = true;
  auto failed = Put("k", "during");
  EXPECT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kUnavailable) << failed.status();
  EXPECT_FALSE(Put("other", "during").ok());
  // Nothing of the failed writes is visible; reads still work.
  EXPECT_EQ(store_->Revision(), rev);
  EXPECT_EQ(ValueAt("k"), "before");
  EXPECT_EQ(ValueAt("other"), "<none>");
  std::vector<mvccpb::Event> events;
  EXPECT_EQ(*store_->ReadEvents(rev + 1, store_->Revision(), 10, &events), rev);
  EXPECT_TRUE(events.empty());

  state_.fail_wal = false;
  // Writes resume once the disk works again; revisions only ever grow.
  // RocksDB resumes in the background after a retryable error; allow it a few seconds.
  absl::StatusOr<int64_t> after = absl::UnknownError("not tried");
  for (int i = 0; i < 200 && !after.ok(); ++i) {
    after = Put("k", "after");
    if (!after.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_GT(*after, rev);
  EXPECT_EQ(ValueAt("k"), "after");

  // And what was acknowledged survives a reopen.
  const int64_t final_rev = store_->Revision();
  StoreOptions options;
  options.env = env_.get();
  Open(options);
  EXPECT_EQ(ValueAt("k"), "after");
  EXPECT_GE(store_->Revision(), final_rev);
}

// A sync that fails leaves the page cache untrustworthy: the write is not acknowledged, the
// store keeps serving reads at the last good revision and refuses writes until a restart
// recovers whatever the WAL really holds.
TEST_F(FaultTest, FailedSyncRefusesWritesUntilRestart) {
  ASSERT_TRUE(Put("k", "before").ok());
  const int64_t rev = store_->Revision();
  state_.fail_sync = true;
  auto failed = Put("k", "during");
  EXPECT_FALSE(failed.ok());
  EXPECT_EQ(store_->Revision(), rev);
  EXPECT_EQ(ValueAt("k"), "before");
  state_.fail_sync = false;
  auto refused = Put("k", "refused");
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(ValueAt("k"), "before");
  EXPECT_EQ(store_->Revision(), rev);

  StoreOptions options;
  options.env = env_.get();
  Open(options);
  EXPECT_GE(store_->Revision(), rev);
  EXPECT_NE(ValueAt("k"), "refused");
  auto after = Put("k", "after");
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_GT(*after, rev);
  EXPECT_EQ(ValueAt("k"), "after");
}

}  // namespace
}  // namespace mkube::store::mvcc
