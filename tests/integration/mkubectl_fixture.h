#pragma once
// The fixture of the mkubectl tests: build/bin/mkubectl as a user runs it (MKUBECONFIG), against
// a real mkube-store and mkube-apiserver started once per test suite.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "tests/util/apiserver_process.h"
#include "tests/util/process.h"
#include "tests/util/store_process.h"

namespace mkube::testing {

class MkubectlTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    store_ = new StoreProcess(dir_->Sub("store"), dir_->Sub("store.log"));
    ASSERT_TRUE(store_->Start().ok());
    api_ = new ApiServerProcess(dir_->path(), store_->address());
    ASSERT_TRUE(api_->Start().ok());
    WriteConfig(dir_->Sub("config"), "admin-token");
    WriteConfig(dir_->Sub("wrong-token"), "nope");
  }
  static void TearDownTestSuite() {
    delete api_;
    delete store_;
    delete dir_;
  }
  static void WriteConfig(const std::string& path, const std::string& token) {
    std::ofstream(path) << "apiVersion: v1\nkind: Config\n"
                        << "clusters:\n- name: test\n  cluster:\n    server: http://"
                        << api_->address() << "\n"
                        << "users:\n- name: admin\n  user:\n    token: " << token << "\n"
                        << "contexts:\n- name: test\n  context: {cluster: test, user: admin}\n"
                        << "current-context: test\n";
  }

  // mkubectl with the test's kubeconfig (MKUBECONFIG, as a user would set it).
  static CommandResult Ctl(std::vector<std::string> args, const std::string& stdin_text = "",
                           const std::string& config = "config") {
    args.insert(args.begin(), BinDir() + "/mkubectl");
    return RunCommand(args, {{"MKUBECONFIG", dir_->Sub(config)}}, stdin_text);
  }
  static std::string Seed(const std::string& name) {
    return std::string(MKUBE_SEED_DIR) + "/" + name;
  }
  static std::string Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_->Sub(name)) << text;
    return dir_->Sub(name);
  }
  static std::vector<std::string> Lines(const std::string& s) {
    return absl::StrSplit(s, '\n', absl::SkipEmpty());
  }

  static inline TempDir* dir_ = nullptr;
  static inline StoreProcess* store_ = nullptr;
  static inline ApiServerProcess* api_ = nullptr;
};

inline const char kNodes[] = R"(apiVersion: v1
kind: Node
metadata:
  name: node01
  labels: {kubernetes.io/hostname: node01}
---
apiVersion: v1
kind: Node
metadata:
  name: node02
  labels: {kubernetes.io/hostname: node02}
)";

}  // namespace mkube::testing
