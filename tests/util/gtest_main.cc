// The main of every GoogleTest binary that tests/CMakeLists.txt registers with ctest. It runs
// the tests as GoogleTest's own main does, then tells ctest what happened in the one way ctest
// can hear per binary: when every test that ran was skipped (GTEST_SKIP, none passed, none
// failed), it exits with kAllSkipped, which the test's SKIP_RETURN_CODE turns into "Skipped"
// in the summary, where an exit of 0 would have said "Passed" for a binary that checked
// nothing on this host. A binary where only some tests skip passes or fails by the others,
// its skipped ones listed in its output ("[  SKIPPED ]").
#include <gtest/gtest.h>

namespace {

// Also SKIP_RETURN_CODE in tests/CMakeLists.txt (and the convention of automake's tests).
constexpr int kAllSkipped = 77;

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int failed = RUN_ALL_TESTS();
  if (failed != 0) return failed;
  const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  if (unit.test_to_run_count() > 0 && unit.skipped_test_count() == unit.test_to_run_count()) {
    return kAllSkipped;
  }
  return 0;
}
