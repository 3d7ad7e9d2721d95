#include "api/quantity.h"

#include <gtest/gtest.h>

namespace mkube::api {
namespace {

TEST(Quantity, ParsesExactly) {
  struct Case {
    const char* text;
    int64_t milli;
  };
  const std::vector<Case> cases = {
      {"100m", 100},
      {"0.5", 500},
      {"1", 1000},
      {"2", 2000},
      {"128Mi", 128LL * 1024 * 1024 * 1000},
      {"1G", 1000000000LL * 1000},
      {"2Gi", 2LL * 1024 * 1024 * 1024 * 1000},
      {"1.5Gi", 3LL * 512 * 1024 * 1024 * 1000},
      {"1e3", 1000 * 1000},
      {"1k", 1000 * 1000},
      {"500u", 1},  // rounded up to a thousandth
      {"1n", 1},
      {"-1", -1000},
      {"+2", 2000},
      {".5", 500},
      {"0", 0},
  };
  for (const auto& c : cases) {
    auto q = Quantity::Parse(c.text);
    ASSERT_TRUE(q.ok()) << c.text << ": " << q.status();
    EXPECT_EQ(q->milli(), c.milli) << c.text;
  }
  EXPECT_EQ(Quantity::Parse("128Mi")->units(), 128LL * 1024 * 1024);
  EXPECT_EQ(Quantity::Parse("100m")->units(), 1) << "rounded up";
  EXPECT_LT(*Quantity::Parse("999m"), *Quantity::Parse("1"));
}

TEST(Quantity, RejectsMalformed) {
  for (const char* bad : {"", "abc", "1.2.3", "12Mx", "1KiB", "m", "1e", "--1", "1 Gi"}) {
    auto q = Quantity::Parse(bad);
    EXPECT_FALSE(q.ok()) << "\"" << bad << "\"";
    if (!q.ok()) {
      EXPECT_NE(std::string(q.status().message()).find("quantities must match"), std::string::npos)
          << bad;
    }
  }
  EXPECT_EQ(Quantity::Parse("99999999999999999999Ei").status().code(),
            absl::StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace mkube::api
