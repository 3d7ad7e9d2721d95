// ImageLocalityPriority: the images a node already has, by size and spread.
#include "scheduler/plugins/image_locality.h"

#include "tests/scheduler/score_table.h"
#include "tests/scheduler/wrappers.h"

namespace mkube::scheduler::plugins {
namespace {

using testing::MakeNode;
using testing::MakePod;

constexpr int64_t kMiB = 1 << 20;

TEST(ImageLocality, LargerImagesOnFewerNodesScoreHigher) {
  auto big = MakeNode("big").Image("soscscs/myapp:v1", 523 * kMiB).Ptr();
  auto small = MakeNode("small").Image("busybox:latest", 20 * kMiB).Ptr();
  auto none = MakeNode("none").Ptr();
  testing::RunScoreTable(
      ImageLocality(),
      {
          // 523 MiB on 1 of 3 nodes counts 174.3 MiB: (174.3 - 23) / (1000 - 23) of 100.
          {"one node has the image",
           MakePod().Image("soscscs/myapp:v1").Obj(),
           {big, small, none},
           {15, 0, 0}},
          {"an image under 23 MiB counts nothing",
           MakePod().Image("busybox").Obj(),
           {big, small, none},
           {0, 0, 0}},
          {"no node has it: skipped", MakePod().Image("nginx").Obj(), {big, small, none}, {}},
          {"a name without a tag is :latest",
           MakePod().Image("app").Obj(),
           {MakeNode("a").Image("app:latest", 1023 * kMiB).Ptr(), MakeNode("b").Ptr()},
           {50, 0}},
          {"the threshold grows with the containers",
           MakePod().Image("app:latest").Image("other").Obj(),
           {MakeNode("a").Image("app:latest", 1000 * kMiB).Ptr()},
           {49}},
      });
}

}  // namespace
}  // namespace mkube::scheduler::plugins
