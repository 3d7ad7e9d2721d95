// Container logs as CRI entries: written by the monitor, shown by the agent with their
// timestamps, since and byte limits.
#include "agent/runtime/cri_log.h"

#include <gtest/gtest.h>

namespace mkube::agent::runtime::crilog {
namespace {

constexpr int64_t kT = 1'796'000'000'123'456'789;  // 2026-11-30T00:53:20.123456789Z

TEST(CriLog, TimesAreWrittenWithNineDigitsAndReadInAnyRfc3339Form) {
  EXPECT_EQ(FormatTime(kT), "2026-11-30T00:53:20.123456789Z");
  EXPECT_EQ(FormatTime(0), "1970-01-01T00:00:00.000000000Z");
  int64_t t = 0;
  ASSERT_TRUE(ParseTime("2026-11-30T00:53:20.123456789Z", &t));
  EXPECT_EQ(t, kT);
  ASSERT_TRUE(ParseTime("2026-11-30T00:53:20Z", &t));
  EXPECT_EQ(t, kT - 123'456'789);
  ASSERT_TRUE(ParseTime("2026-11-30T02:53:20.5+02:00", &t));
  EXPECT_EQ(t, kT - 123'456'789 + 500'000'000);
  for (const char* bad : {"", "2026-11-29", "2026-11-30T00:53:20", "2026-13-29T23:33:20Z",
                          "2026-11-30T00:53:20.Z", "2026-11-29 23:33:20Z", "x026-11-29T23:33:20Z"}) {
    EXPECT_FALSE(ParseTime(bad, &t)) << bad;
  }
}

TEST(CriLog, EachLineIsAFullEntryAndWhatFollowsAPartialOne) {
  EXPECT_EQ(Entries("a\nbc\nd", "stdout", kT),
            "2026-11-30T00:53:20.123456789Z stdout F a\n"
            "2026-11-30T00:53:20.123456789Z stdout F bc\n"
            "2026-11-30T00:53:20.123456789Z stdout P d\n");
  EXPECT_EQ(Entries("\n", "stderr", kT), "2026-11-30T00:53:20.123456789Z stderr F \n");
  EXPECT_EQ(Entries("", "stdout", kT), "");
  Entry e;
  ASSERT_TRUE(ParseEntry("2026-11-30T00:53:20.123456789Z stderr P x y", &e));
  EXPECT_EQ(e.unix_nanos, kT);
  EXPECT_EQ(e.stream, "stderr");
  EXPECT_TRUE(e.partial);
  EXPECT_EQ(e.content, "x y");
  ASSERT_TRUE(ParseEntry("2026-11-30T00:53:20.123456789Z stdout F", &e));
  EXPECT_EQ(e.content, "");
  EXPECT_FALSE(ParseEntry("hello world", &e));
  EXPECT_FALSE(ParseEntry("2026-11-30T00:53:20Z stdout X hi", &e));
}

TEST(CriLog, TheDecoderJoinsPartsAndWaitsForWholeLines) {
  const std::string log = Entries("hel", "stdout", kT) + Entries("lo\nwor", "stdout", kT + 1) +
                          Entries("ld\n", "stdout", kT + 2);
  Decoder d({});
  std::string shown;
  for (char c : log) shown += d.Feed(std::string(1, c));  // fed a byte at a time
  EXPECT_EQ(shown, "hello\nworld\n");
}

TEST(CriLog, TimestampsStartEachLine) {
  Decoder d({.timestamps = true});
  EXPECT_EQ(d.Feed(Entries("a\nb", "stdout", kT) + Entries("c\n", "stdout", kT + 1)),
            "2026-11-30T00:53:20.123456789Z a\n2026-11-30T00:53:20.123456789Z bc\n");
}

TEST(CriLog, SinceLeavesOutWhatCameBefore) {
  Decoder d({.since_nanos = kT + 1});
  EXPECT_EQ(d.Feed(Entries("old\n", "stdout", kT) + Entries("new\n", "stderr", kT + 1)), "new\n");
}

TEST(CriLog, TheByteLimitCutsAndEnds) {
  Decoder d({.limit_bytes = 6});
  EXPECT_EQ(d.Feed(Entries("abcd\nefgh\n", "stdout", kT)), "abcd\ne");
  EXPECT_TRUE(d.done());
  EXPECT_EQ(d.Feed(Entries("more\n", "stdout", kT)), "");
  Decoder exact({.limit_bytes = 5});
  EXPECT_EQ(exact.Feed(Entries("abcd\nx\n", "stdout", kT)), "abcd\n");
  EXPECT_TRUE(exact.done());
}

TEST(CriLog, LinesThatAreNotEntriesAreShownAsTheyAre) {
  Decoder d({.since_nanos = kT, .timestamps = true});
  EXPECT_EQ(d.Feed("written raw\n" + Entries("new\n", "stdout", kT)),
            "written raw\n2026-11-30T00:53:20.123456789Z new\n");
}

}  // namespace
}  // namespace mkube::agent::runtime::crilog
