// The real mkube-store driven by the real etcdctl (v3.4), as a user would.
#include <gtest/gtest.h>

#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "tests/util/etcd_client.h"
#include "tests/util/process.h"
#include "tests/util/store_process.h"

namespace mkube::testing {
namespace {

class EtcdctlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::make_unique<StoreProcess>(dir_.Sub("data"), dir_.Sub("store.log"));
    auto st = store_->Start();
    ASSERT_TRUE(st.ok()) << st;
  }

  CommandResult Etcdctl(std::vector<std::string> args, const std::string& stdin_text = "") {
    std::vector<std::string> argv = {EtcdctlPath(), "--endpoints=" + store_->address(),
                                     "--command-timeout=10s"};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, {{"ETCDCTL_API", "3"}}, stdin_text);
  }

  // Runs etcdctl and expects success; returns stdout.
  std::string Ok(std::vector<std::string> args, const std::string& stdin_text = "") {
    auto r = Etcdctl(args, stdin_text);
    EXPECT_EQ(r.exit_code, 0) << absl::StrJoin(args, " ") << "\nstdout: " << r.out
                              << "\nstderr: " << r.err;
    return r.out;
  }

  TempDir dir_;
  std::unique_ptr<StoreProcess> store_;
};

TEST_F(EtcdctlTest, PutGetPrefixRevisionLimitJson) {
  EXPECT_EQ(Ok({"put", "foo", "bar"}), "OK\n");
  EXPECT_EQ(Ok({"put", "foo/a", "1"}), "OK\n");
  EXPECT_EQ(Ok({"put", "foo/b", "2"}), "OK\n");
  EXPECT_EQ(Ok({"put", "foo", "baz"}), "OK\n");
  EXPECT_EQ(Ok({"get", "foo"}), "foo\nbaz\n");
  EXPECT_EQ(Ok({"get", "foo", "--rev", "2"}), "foo\nbar\n");
  EXPECT_EQ(Ok({"get", "foo/", "--prefix"}), "foo/a\n1\nfoo/b\n2\n");
  EXPECT_EQ(Ok({"get", "foo", "--prefix", "--keys-only"}), "foo\n\nfoo/a\n\nfoo/b\n\n");
  EXPECT_EQ(Ok({"get", "foo/", "--prefix", "--limit", "1"}), "foo/a\n1\n");
  EXPECT_EQ(Ok({"get", "foo/", "--prefix", "--sort-by=MODIFY", "--order=DESCEND", "--limit", "1"}),
            "foo/b\n2\n");
  EXPECT_EQ(Ok({"get", "--from-key", "foo/b"}), "foo/b\n2\n");
  const std::string json = Ok({"get", "foo/", "--prefix", "--limit", "1", "-w", "json"});
  EXPECT_TRUE(absl::StrContains(json, "\"revision\":5")) << json;
  EXPECT_TRUE(absl::StrContains(json, "\"more\":true")) << json;
  EXPECT_TRUE(absl::StrContains(json, "\"count\":2")) << json;
  EXPECT_TRUE(absl::StrContains(json, "\"key\":\"Zm9vL2E=\"")) << json;  // base64 of foo/a
  EXPECT_TRUE(absl::StrContains(json, "\"create_revision\":3")) << json;
}

TEST_F(EtcdctlTest, DeletePrefixWithPrevKv) {
  Ok({"put", "d/1", "a"});
  Ok({"put", "d/2", "b"});
  Ok({"put", "e", "c"});
  EXPECT_EQ(Ok({"del", "--prefix", "d/", "--prev-kv"}), "2\nd/1\na\nd/2\nb\n");
  EXPECT_EQ(Ok({"get", "d/", "--prefix"}), "");
  EXPECT_EQ(Ok({"get", "e"}), "e\nc\n");
  EXPECT_EQ(Ok({"del", "nothing"}), "0\n");
}

TEST_F(EtcdctlTest, TxnFromStdin) {
  Ok({"put", "w/b", "2"});
  const std::string txn =
      "value(\"w/b\") = \"2\"\nmod(\"w/b\") > \"0\"\n\nput w/c yes\nget w/b\n\nput w/c no\n\n";
  EXPECT_EQ(Ok({"txn"}, txn), "SUCCESS\n\nOK\n\nw/b\n2\n");
  EXPECT_EQ(Ok({"get", "w/c"}), "w/c\nyes\n");
  const std::string failing = "version(\"w/b\") != \"1\"\n\nput w/c yes\n\nput w/c no\n\n";
  EXPECT_EQ(Ok({"txn"}, failing), "FAILURE\n\nOK\n");
  EXPECT_EQ(Ok({"get", "w/c"}), "w/c\nno\n");
}

// Starts `etcdctl watch ...` in the background, writing to a file.
class BackgroundWatch {
 public:
  BackgroundWatch(const std::string& endpoint, std::vector<std::string> args,
                  const std::string& out)
      : out_(out) {
    std::vector<std::string> argv = {EtcdctlPath(), "--endpoints=" + endpoint, "watch"};
    argv.insert(argv.end(), args.begin(), args.end());
    proc_ = std::make_unique<Subprocess>(argv, out, std::map<std::string, std::string>{{"ETCDCTL_API", "3"}});
  }
  // Waits until the output has at least `lines` lines.
  std::vector<std::string> WaitLines(size_t lines) {
    std::vector<std::string> got;
    for (int i = 0; i < 2000; ++i) {
      got = absl::StrSplit(ReadFile(out_), '\n', absl::SkipEmpty());
      if (got.size() >= lines) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return got;
  }
  Subprocess& proc() { return *proc_; }

 private:
  std::string out_;
  std::unique_ptr<Subprocess> proc_;
};

TEST_F(EtcdctlTest, WatchPrefixFromARevisionThenLive) {
  Ok({"put", "w/a", "1"});  // 2
  Ok({"put", "x", "1"});    // 3
  Ok({"put", "w/b", "2"});  // 4
  BackgroundWatch watch(store_->address(), {"--prefix", "w/", "--rev", "2", "--prev-kv"},
                        dir_.Sub("watch.out"));
  auto lines = watch.WaitLines(6);
  ASSERT_EQ(lines, (std::vector<std::string>{"PUT", "w/a", "1", "PUT", "w/b", "2"}));
  Ok({"put", "w/a", "3"});
  Ok({"del", "w/b"});
  lines = watch.WaitLines(17);
  const std::vector<std::string> want = {"PUT", "w/a", "1",   "PUT", "w/b", "2",
                                         "PUT", "w/a", "1",   "w/a", "3",   "DELETE",
                                         "w/b", "2",   "w/b"};
  ASSERT_GE(lines.size(), want.size());
  lines.resize(want.size());
  EXPECT_EQ(lines, want);
}

TEST_F(EtcdctlTest, CompactionThenOldRevisionsFail) {
  for (int i = 0; i < 6; ++i) Ok({"put", "c", std::to_string(i)});  // revisions 2..7
  EXPECT_EQ(Ok({"compaction", "5"}), "compacted revision 5\n");
  auto old = Etcdctl({"get", "c", "--rev", "3"});
  EXPECT_NE(old.exit_code, 0);
  EXPECT_TRUE(absl::StrContains(old.err, "required revision has been compacted")) << old.err;
  EXPECT_EQ(Ok({"get", "c", "--rev", "5"}), "c\n3\n");
  auto future = Etcdctl({"get", "c", "--rev", "100"});
  EXPECT_TRUE(absl::StrContains(future.err, "required revision is a future revision"))
      << future.err;

  auto watch = Etcdctl({"watch", "c", "--rev", "2"});
  EXPECT_EQ(watch.exit_code, 5) << watch.out << watch.err;
  EXPECT_TRUE(absl::StrContains(watch.out + watch.err, "required revision has been compacted"))
      << watch.out << watch.err;
  auto again = Etcdctl({"compaction", "4"});
  EXPECT_NE(again.exit_code, 0);
  EXPECT_TRUE(absl::StrContains(again.err, "required revision has been compacted"));
}

TEST_F(EtcdctlTest, LeaseGrantAttachKeepAliveAndExpire) {
  const std::string granted = Ok({"lease", "grant", "2"});
  ASSERT_TRUE(absl::StartsWith(granted, "lease ")) << granted;
  const std::string id = std::vector<std::string>(absl::StrSplit(granted, ' '))[1];
  EXPECT_TRUE(absl::StrContains(granted, "granted with TTL(2s)")) << granted;
  Ok({"put", "--lease=" + id, "leased", "v"});
  Ok({"put", "kept", "v"});
  const std::string ttl = Ok({"lease", "timetolive", id, "--keys"});
  EXPECT_TRUE(absl::StrContains(ttl, "attached keys([leased])")) << ttl;
  EXPECT_TRUE(absl::StrContains(Ok({"lease", "list"}), id));
  EXPECT_TRUE(absl::StrContains(Ok({"lease", "keep-alive", "--once", id}), "keepalived with TTL(2)"));

  // A watcher sees the DELETE when the lease runs out.
  BackgroundWatch watch(store_->address(), {"leased"}, dir_.Sub("lease-watch.out"));
  auto lines = watch.WaitLines(2);
  EXPECT_EQ(lines, (std::vector<std::string>{"DELETE", "leased"}));
  EXPECT_EQ(Ok({"get", "leased"}), "");
  EXPECT_EQ(Ok({"get", "kept"}), "kept\nv\n");
  EXPECT_TRUE(absl::StrContains(Ok({"lease", "timetolive", id}), "already expired"));
  auto gone = Etcdctl({"lease", "keep-alive", "--once", id});
  EXPECT_NE(gone.exit_code, 0);
  EXPECT_TRUE(absl::StrContains(gone.err, "requested lease not found")) << gone.err;

  const std::string second = Ok({"lease", "grant", "60"});
  const std::string id2 = std::vector<std::string>(absl::StrSplit(second, ' '))[1];
  Ok({"put", "--lease=" + id2, "r", "v"});
  EXPECT_TRUE(absl::StrContains(Ok({"lease", "revoke", id2}), "revoked"));
  EXPECT_EQ(Ok({"get", "r"}), "");
}

TEST_F(EtcdctlTest, EndpointStatusHealthAndMembers) {
  Ok({"put", "a", "b"});
  const std::string status = Ok({"endpoint", "status", "-w", "json"});
  EXPECT_TRUE(absl::StrContains(status, "\"revision\":2")) << status;
  EXPECT_TRUE(absl::StrContains(status, "\"version\":\"3.4.0\"")) << status;
  EXPECT_TRUE(absl::StrContains(Ok({"endpoint", "status"}), ", true, false,")) << "is leader";
  auto health = Etcdctl({"endpoint", "health"});  // etcdctl 3.4 reports health on stderr
  EXPECT_EQ(health.exit_code, 0);
  EXPECT_TRUE(absl::StrContains(health.out + health.err, "is healthy")) << health.err;
  const std::string members = Ok({"member", "list"});
  EXPECT_TRUE(absl::StrContains(members, "started, default")) << members;
  EXPECT_TRUE(absl::StrContains(members, store_->address())) << members;
}

TEST_F(EtcdctlTest, BadInputGetsEtcdErrors) {
  auto empty = Etcdctl({"put", "", "v"});
  EXPECT_NE(empty.exit_code, 0);
  EXPECT_TRUE(absl::StrContains(empty.err, "key is not provided")) << empty.err;

  EtcdClient client(store_->address());
  auto big = client.Put("big", std::string(1536 * 1024 + 1, 'x'));
  EXPECT_EQ(big.status().code(), absl::StatusCode::kResourceExhausted) << big.status();
  auto huge = client.Put("huge", std::string(4 << 20, 'x'));
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted) << huge.status();
  EXPECT_EQ(Ok({"get", "big"}), "");
  // The store still serves after refusing.
  EXPECT_EQ(Ok({"put", "small", "v"}), "OK\n");
}

TEST_F(EtcdctlTest, StopsCleanlyOnSigtermAndKeepsData) {
  Ok({"put", "persist", "me"});
  EXPECT_EQ(store_->Stop(), 0);
  ASSERT_TRUE(store_->Start().ok());
  EXPECT_EQ(Ok({"get", "persist"}), "persist\nme\n");
  EXPECT_EQ(Ok({"put", "next", "x"}), "OK\n");
  EXPECT_TRUE(absl::StrContains(Ok({"get", "next", "-w", "json"}), "\"mod_revision\":3"));
}

}  // namespace
}  // namespace mkube::testing
