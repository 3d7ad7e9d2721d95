#pragma once
// The fixture of the mkubectl tests: build/bin/mkubectl as a user runs it (MKUBECONFIG), against
// a real mkube-store and mkube-apiserver started once per test suite.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "tests/util/cluster_suite.h"

namespace mkube::testing {

class MkubectlTest : public ClusterSuite {
 protected:
  static void SetUpTestSuite() {
    StartCluster(Cluster::ApiserverOnly());
    cluster_->WriteKubeconfig(dir().Sub("wrong-token"), "nope");
  }
  static const TempDir& dir() { return cluster_->dir(); }

  // mkubectl with the test's kubeconfig (MKUBECONFIG, as a user would set it).
  static CommandResult Ctl(std::vector<std::string> args, const std::string& stdin_text = "",
                           const std::string& config = "config") {
    return cluster_->Ctl(std::move(args), stdin_text, std::chrono::seconds(30),
                         {{"MKUBECONFIG", dir().Sub(config)}});
  }
  static std::string Seed(const std::string& name) {
    return std::string(MKUBE_SEED_DIR) + "/" + name;
  }
  static std::string Write(const std::string& name, const std::string& text) {
    std::ofstream(dir().Sub(name)) << text;
    return dir().Sub(name);
  }
  static std::vector<std::string> Lines(const std::string& s) {
    return absl::StrSplit(s, '\n', absl::SkipEmpty());
  }
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
