#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/util/cluster.h"

namespace mkube::testing {

// The base of a test suite whose tests share one Cluster: its SetUpTestSuite calls
// StartCluster, and the cluster stops after the suite's last test.
class ClusterSuite : public ::testing::Test {
 protected:
  static void StartCluster(Cluster::Options options) {
    cluster_ = new Cluster();
    auto st = cluster_->Start(std::move(options));
    ASSERT_TRUE(st.ok()) << st;
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }

  // mkubectl with the cluster's kubeconfig.
  static CommandResult Ctl(std::vector<std::string> args, const std::string& stdin_text = "",
                           std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    return cluster_->Ctl(std::move(args), stdin_text, timeout);
  }

  static inline Cluster* cluster_ = nullptr;
};

}  // namespace mkube::testing
