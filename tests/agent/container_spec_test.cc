#include "agent/runtime/container_spec.h"

#include <gtest/gtest.h>

namespace mkube::agent::runtime {
namespace {

using Strings = std::vector<std::string>;

Image TestImage() {
  Image img;
  img.root = "/images/app/v1";
  img.config.entrypoint = {"app"};
  img.config.cmd = {"--serve"};
  img.config.env = {"PATH=/opt/bin", "MODE=prod"};
  return img;
}

api::Container Spec(const Strings& command, const Strings& args) {
  api::Container c;
  c.set_name("c");
  for (const auto& s : command) c.add_command(s);
  for (const auto& s : args) c.add_args(s);
  return c;
}

TEST(ContainerArgv, CommandAndArgsCombineWithTheImageAsInKubernetes) {
  struct Case {
    std::string name;
    Strings command, args, image_entrypoint, want;
  } cases[] = {
      {"neither: the image's entrypoint and cmd", {}, {}, {"app"}, {"app", "--serve"}},
      {"args only: they replace the cmd", {}, {"--check"}, {"app"}, {"app", "--check"}},
      {"command only: the image's cmd is dropped", {"sh", "-c", "true"}, {}, {"app"}, {"sh", "-c", "true"}},
      {"command and args", {"echo"}, {"a", "b"}, {"app"}, {"echo", "a", "b"}},
      {"no entrypoint: the cmd alone", {}, {}, {}, {"--serve"}},
      {"a relative path with a slash is the image's file", {"bin/tool"}, {}, {}, {"/images/app/v1/bin/tool"}},
      {"an absolute path stays", {"/bin/sh"}, {}, {}, {"/bin/sh"}},
  };
  for (const auto& c : cases) {
    Image img = TestImage();
    img.config.entrypoint = c.image_entrypoint;
    EXPECT_EQ(ContainerArgv(Spec(c.command, c.args), img), c.want) << c.name;
  }
}

TEST(ContainerEnv, ImageThenPodThenContainer) {
  api::Container spec = Spec({}, {});
  auto* e = spec.add_env();
  e->set_name("MODE");
  e->set_value("dev");
  auto* e2 = spec.add_env();
  e2->set_name("EXTRA");
  e2->set_value("1");
  EXPECT_EQ(ContainerEnv(spec, TestImage(), "web", "127.1.0.2"),
            (Strings{"PATH=/images/app/v1/bin:/opt/bin", "MODE=dev", "HOSTNAME=web",
                     "POD_IP=127.1.0.2", "IMAGE_ROOT=/images/app/v1", "EXTRA=1"}));
  Image plain;
  plain.root = "/images/busybox/latest";
  EXPECT_EQ(ContainerEnv(Spec({}, {}), plain, "p", "ip")[0],
            "PATH=/images/busybox/latest/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
}

TEST(ContainerDir, WorkingDirIsInsideThePodsFolder) {
  api::Container spec;
  EXPECT_EQ(ContainerDir(spec, "/pods/u/root"), "/pods/u/root");
  spec.set_working_dir("/usr/share/app");
  EXPECT_EQ(ContainerDir(spec, "/pods/u/root"), "/pods/u/root/usr/share/app");
  spec.set_working_dir("data");
  EXPECT_EQ(ContainerDir(spec, "/pods/u/root"), "/pods/u/root/data");
}

}  // namespace
}  // namespace mkube::agent::runtime
