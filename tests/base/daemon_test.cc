#include "base/daemon.h"

#include "gtest/gtest.h"

namespace mkube {
namespace {

TEST(DaemonFlags, APositiveDurationIsParsedAndAnyOtherNamesTheFlag) {
  auto d = daemon::PositiveDuration("--node-monitor-period", "1m30s");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, absl::Seconds(90));
  for (const char* bad : {"0s", "-5s", "soon"}) {
    auto e = daemon::PositiveDuration("--node-monitor-period", bad);
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_NE(e.status().message().find("--node-monitor-period"), std::string::npos);
  }
}

}  // namespace
}  // namespace mkube
