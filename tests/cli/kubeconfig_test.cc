#include "cli/kubeconfig.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "tests/util/process.h"

namespace mkube::cli {
namespace {

std::string Config(const std::string& cluster, const std::string& extra_context = "") {
  return "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n" + cluster +
         "users:\n- name: u\n  user:\n    token: secret\n"
         "contexts:\n- name: ctx\n  context:\n    cluster: c\n    user: u\n" +
         extra_context + "current-context: ctx\n";
}

class KubeConfigTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_.Sub(name)) << text;
    return dir_.Sub(name);
  }
  mkube::testing::TempDir dir_;
};

TEST_F(KubeConfigTest, HttpsWithEmbeddedCa) {
  // "-----BEGIN CERTIFICATE-----\n" in base64.
  auto cfg = LoadKubeConfig(Write(
      "config", Config("    server: https://127.0.0.1:6443\n"
                       "    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==\n",
                       "    namespace: kube-system\n")));
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_EQ(cfg->address, "127.0.0.1:6443");
  EXPECT_TRUE(cfg->tls);
  EXPECT_EQ(cfg->ca_pem, "-----BEGIN CERTIFICATE-----\n");
  EXPECT_EQ(cfg->token, "secret");
  EXPECT_EQ(cfg->namespace_, "kube-system");
}

TEST_F(KubeConfigTest, PlaintextAndACaFileRelativeToTheConfig) {
  auto plain = LoadKubeConfig(Write("plain", Config("    server: http://localhost:8080\n")));
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_FALSE(plain->tls);
  EXPECT_EQ(plain->address, "localhost:8080");
  EXPECT_EQ(plain->namespace_, "default");
  Write("ca.crt", "PEM");
  auto file = LoadKubeConfig(
      Write("withfile",
            Config("    server: https://10.0.0.1:6443\n    certificate-authority: ca.crt\n")));
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->ca_pem, "PEM");
}

TEST_F(KubeConfigTest, ErrorsNameTheProblem) {
  struct Case {
    std::string text, want;
  };
  const std::vector<Case> cases = {
      {"current-context: [", "error loading config file"},
      {"apiVersion: v1\nkind: Config\n", "no current-context"},
      {"current-context: x\ncontexts: []\n", "context \"x\" does not exist"},
      {Config("    server: https://127.0.0.1:6443\n"), "needs certificate-authority"},
      {Config("    server: https://127.0.0.1:6443\n    certificate-authority: missing.crt\n"),
       "unable to read certificate-authority"},
      {Config("    certificate-authority-data: '!!'\n"), "the cluster has no server"},
  };
  for (const auto& c : cases) {
    auto cfg = LoadKubeConfig(Write("bad", c.text));
    ASSERT_FALSE(cfg.ok()) << c.text;
    EXPECT_NE(std::string(cfg.status().message()).find(c.want), std::string::npos)
        << c.want << " / " << cfg.status();
  }
  auto missing = LoadKubeConfig(dir_.Sub("absent"));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

TEST_F(KubeConfigTest, WhichFileIsRead) {
  EXPECT_EQ(KubeConfigPath("/flag/config"), "/flag/config");
  setenv("MKUBECONFIG", "/env/config", 1);
  EXPECT_EQ(KubeConfigPath(""), "/env/config");
  unsetenv("MKUBECONFIG");
  setenv("HOME", "/home/someone", 1);
  EXPECT_EQ(KubeConfigPath(""), "/home/someone/.mkube/config");
}

}  // namespace
}  // namespace mkube::cli
