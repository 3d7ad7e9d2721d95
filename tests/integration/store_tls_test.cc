// The real mkube-store serving TLS with client-certificate authentication, as etcd does:
// etcdctl and gRPC C++ clients with the cluster's certificates, clients without one, a
// client that floods over TLS, and the flags' refusals at start.
#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "absl/strings/match.h"
#include "tests/bench/bench_util.h"
#include "tests/util/apiserver_process.h"
#include "tests/util/etcd_client.h"
#include "tests/util/process.h"
#include "tests/util/raw_h2.h"
#include "tests/util/store_process.h"
#include "tests/util/test_pki.h"

namespace mkube::testing {
namespace {

using mkube::bench::PeakRssMib;
namespace h2 = mkube::testing::h2;

// A TLS client on a socket of its own, for what gRPC clients never do.
class TlsSocket {
 public:
  // Connects and shakes hands offering `alpn` (e.g. "\x02h2"); ok() says whether it worked.
  TlsSocket(const std::string& address, const TestPki& pki, const std::string& alpn) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    const bool loaded =
        SSL_CTX_load_verify_locations(ctx_, pki.ca.c_str(), nullptr) == 1 &&
        SSL_CTX_use_certificate_file(ctx_, pki.client_cert.c_str(), SSL_FILETYPE_PEM) == 1 &&
        SSL_CTX_use_PrivateKey_file(ctx_, pki.client_key.c_str(), SSL_FILETYPE_PEM) == 1;
    EXPECT_TRUE(loaded) << "the test's certificates";
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    SSL_CTX_set_alpn_protos(ctx_, reinterpret_cast<const unsigned char*>(alpn.data()),
                            static_cast<unsigned>(alpn.size()));
    fd_ = h2::ConnectTcp(address);
    if (!loaded || fd_ < 0) return;
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_);
    SSL_set_tlsext_host_name(ssl_, "localhost");
    ok_ = SSL_connect(ssl_) == 1;
  }
  ~TlsSocket() {
    if (ssl_) SSL_free(ssl_);
    SSL_CTX_free(ctx_);
    if (fd_ >= 0) close(fd_);
  }
  bool ok() const { return ok_; }
  std::string alpn() const {
    if (!ok_) return "";
    const unsigned char* p = nullptr;
    unsigned n = 0;
    SSL_get0_alpn_selected(ssl_, &p, &n);
    return std::string(reinterpret_cast<const char*>(p), n);
  }
  // Writes `data` unless the peer stops taking it for `stall`; false then (or on error).
  bool Write(const std::string& data, std::chrono::milliseconds stall) {
    size_t pos = 0;
    while (pos < data.size()) {
      pollfd p{fd_, POLLOUT, 0};
      if (SSL_has_pending(ssl_) == 0 && poll(&p, 1, static_cast<int>(stall.count())) <= 0) {
        return false;
      }
      const int n = SSL_write(ssl_, data.data() + pos, static_cast<int>(data.size() - pos));
      if (n <= 0) return false;
      pos += n;
    }
    return true;
  }
  int fd() const { return fd_; }

 private:
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  int fd_ = -1;
  bool ok_ = false;
};

std::shared_ptr<grpc::ChannelCredentials> Credentials(const TestPki& pki, bool client_cert) {
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = ReadFile(pki.ca);
  if (client_cert) {
    ssl.pem_cert_chain = ReadFile(pki.client_cert);
    ssl.pem_private_key = ReadFile(pki.client_key);
  }
  return grpc::SslCredentials(ssl);
}

class StoreTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto pki = MakeTestPki(dir_.Sub("pki"));
    ASSERT_TRUE(pki.ok()) << pki.status();
    pki_ = *pki;
    store_ = std::make_unique<StoreProcess>(
        dir_.Sub("data"), dir_.Sub("store.log"),
        std::vector<std::string>{"--cert-file", pki_.server_cert, "--key-file", pki_.server_key,
                                 "--trusted-ca-file", pki_.ca, "--client-cert-auth"});
    auto st = store_->Start();
    ASSERT_TRUE(st.ok()) << st;
  }

  CommandResult Etcdctl(std::vector<std::string> flags, std::vector<std::string> args) {
    std::vector<std::string> argv = {EtcdctlPath(), "--endpoints=https://" + store_->address(),
                                     "--dial-timeout=1s", "--command-timeout=2s"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, {{"ETCDCTL_API", "3"}}, "", std::chrono::seconds(20));
  }
  std::vector<std::string> Trusted() {
    return {"--cacert", pki_.ca, "--cert", pki_.client_cert, "--key", pki_.client_key};
  }

  TempDir dir_;
  TestPki pki_;
  std::unique_ptr<StoreProcess> store_;
};

TEST_F(StoreTlsTest, EtcdctlWithATrustedCertificateReadsAndWrites) {
  auto put = Etcdctl(Trusted(), {"put", "greeting", "hello"});
  ASSERT_EQ(put.exit_code, 0) << put.err;
  auto get = Etcdctl(Trusted(), {"get", "greeting", "--print-value-only"});
  EXPECT_EQ(get.out, "hello\n") << get.err;
  auto members = Etcdctl(Trusted(), {"member", "list"});
  EXPECT_TRUE(absl::StrContains(members.out, "https://" + store_->address())) << members.out;
}

TEST_F(StoreTlsTest, ClientsWithoutATrustedCertificateAreTurnedAway) {
  auto none = Etcdctl({"--cacert", pki_.ca}, {"get", "x"});
  EXPECT_NE(none.exit_code, 0) << none.out;
  auto stranger =
      Etcdctl({"--cacert", pki_.ca, "--cert", pki_.stranger_cert, "--key", pki_.stranger_key},
              {"get", "x"});
  EXPECT_NE(stranger.exit_code, 0) << stranger.out;
  auto plain = RunCommand({EtcdctlPath(), "--endpoints=http://" + store_->address(),
                           "--dial-timeout=1s", "--command-timeout=2s", "get", "x"},
                          {{"ETCDCTL_API", "3"}}, "", std::chrono::seconds(20));
  EXPECT_NE(plain.exit_code, 0) << plain.out;
  // Said in the log (at most once per 10 s), and trusted clients are still served.
  EXPECT_TRUE(absl::StrContains(ReadFile(dir_.Sub("store.log")), "TLS handshake"))
      << ReadFile(dir_.Sub("store.log"));
  EXPECT_EQ(Etcdctl(Trusted(), {"put", "after", "yes"}).exit_code, 0);

  EtcdClient no_cert(store_->address(), Credentials(pki_, false));
  EXPECT_FALSE(no_cert.Ready());
}

TEST_F(StoreTlsTest, GrpcClientsSendLargeAndConcurrentMessages) {
  EtcdClient client(store_->address(), Credentials(pki_, true));
  // 1.4 MiB: about 90 TLS records each way.
  const std::string big(1400 << 10, 'b');
  ASSERT_TRUE(client.Put("big", big).ok());
  auto got = client.Get("big");
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->kvs_size(), 1);
  EXPECT_EQ(got->kvs(0).value(), big);

  std::vector<std::thread> writers;
  std::atomic<int> failed{0};
  for (int t = 0; t < 8; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < 40; ++i) {
        if (!client
                 .Put("k/" + std::to_string(t) + "/" + std::to_string(i),
                      std::string(10000, 'a' + t))
                 .ok()) {
          failed.fetch_add(1);
        }
      }
    });
  }
  for (auto& w : writers) w.join();
  EXPECT_EQ(failed.load(), 0);
  etcdserverpb::RangeRequest all;
  all.set_key("k/");
  all.set_range_end("k0");
  auto range = client.Range(all);
  ASSERT_TRUE(range.ok()) << range.status();
  EXPECT_EQ(range->kvs_size(), 320);
}

TEST_F(StoreTlsTest, OnlyHttp2IsNegotiated) {
  TlsSocket h2(store_->address(), pki_, std::string("\x02h2", 3));
  ASSERT_TRUE(h2.ok());
  EXPECT_EQ(h2.alpn(), "h2");
  TlsSocket http1(store_->address(), pki_, std::string("\x08http/1.1", 9));
  EXPECT_FALSE(http1.ok());  // no_application_protocol
}

// A client that sends PINGs over TLS and reads nothing: the store stops reading it or sends
// it away (GOAWAY ENHANCE_YOUR_CALM), its memory stays bounded, and others are served.
TEST_F(StoreTlsTest, APingFloodOverTlsIsHeldAndOthersAreServed) {
#ifdef MKUBE_ASAN
  GTEST_SKIP() << "AddressSanitizer's allocator keeps what is freed: RSS says nothing here";
#endif
  const int64_t before = PeakRssMib(store_->pid());
  TlsSocket flood(store_->address(), pki_, std::string("\x02h2", 3));
  ASSERT_TRUE(flood.ok());
  ASSERT_TRUE(flood.Write(h2::Preface(), std::chrono::seconds(5)));
  std::string pings;
  for (int i = 0; i < 4096; ++i) pings += h2::Frame(h2::kPing, 0, 0, "12345678");
  // 96 MiB offered: the store must stop taking them (cut or no longer read) well before.
  size_t sent = 0;
  while (sent < (size_t{96} << 20) && flood.Write(pings, std::chrono::seconds(1))) {
    sent += pings.size();
  }
  EXPECT_LT(sent, size_t{64} << 20) << "the store read a PING flood it did not answer";
  EXPECT_LT(PeakRssMib(store_->pid()) - before, 64) << "MiB more at the peak";
  EtcdClient other(store_->address(), Credentials(pki_, true));
  EXPECT_TRUE(other.Put("still", "served").ok());
}

// The apiserver reaches the store with its client certificate, through one endpoint or a list
// of them (one channel: the first endpoint's host is the name the certificates are checked
// against).
TEST_F(StoreTlsTest, TheApiserverPresentsItsClientCertificate) {
  int n = 0;
  for (const std::string& endpoints :
       {"https://" + store_->address(),
        "https://" + store_->address() + ",https://" + store_->address()}) {
    const std::string dir = dir_.Sub("api" + std::to_string(++n));
    std::filesystem::create_directories(dir);
    ApiServerProcess api(dir, endpoints);
    api.extra_args = {"--etcd-cafile",  pki_.ca,          "--etcd-certfile",
                      pki_.client_cert, "--etcd-keyfile", pki_.client_key};
    auto st = api.Start();
    EXPECT_TRUE(st.ok()) << endpoints << ": " << st;
    if (st.ok()) api.Kill9();
  }
}

// The flags' mistakes end the store at start with a message that names them.
TEST(StoreTlsFlagsTest, MistakesAreRefusedAtStart) {
  TempDir dir;
  auto pki = MakeTestPki(dir.Sub("pki"));
  ASSERT_TRUE(pki.ok()) << pki.status();
  auto run = [&](std::vector<std::string> flags) {
    std::vector<std::string> argv = {BinDir() + "/mkube-store", "--data-dir", dir.Sub("data")};
    argv.insert(argv.end(), flags.begin(), flags.end());
    return RunCommand(argv, {}, "", std::chrono::seconds(20));
  };
  auto open = run({"--listen", "0.0.0.0:0"});
  EXPECT_EQ(open.exit_code, 1);
  EXPECT_TRUE(
      absl::StrContains(open.err, "0.0.0.0:0 is not a loopback address: serving it needs TLS"))
      << open.err;
  auto mismatch = run({"--cert-file", pki->server_cert, "--key-file", pki->client_key});
  EXPECT_EQ(mismatch.exit_code, 1);
  EXPECT_TRUE(absl::StrContains(mismatch.err, "does not match certificate file")) << mismatch.err;
  auto no_ca =
      run({"--cert-file", pki->server_cert, "--key-file", pki->server_key, "--client-cert-auth"});
  EXPECT_EQ(no_ca.exit_code, 1);
  EXPECT_TRUE(absl::StrContains(no_ca.err, "needs a trusted CA file")) << no_ca.err;
  auto half = run({"--cert-file", pki->server_cert});
  EXPECT_EQ(half.exit_code, 1);
  EXPECT_TRUE(absl::StrContains(half.err, "needs both a certificate file and a key file"))
      << half.err;
}

}  // namespace
}  // namespace mkube::testing
