#include "agent/runtime/sandbox.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "fmt/format.h"
#include "nlohmann/json.hpp"

namespace mkube::agent::runtime {
namespace {
namespace fs = std::filesystem;
using Kind = MountStep::Kind;

HostIsolation Root() {
  HostIsolation h;
  h.root = h.mount_ns = h.overlay = true;
  return h;
}

api::Pod PodWith() {
  api::Pod pod;
  pod.mutable_metadata()->set_name("web");
  pod.mutable_metadata()->set_namespace_("default");
  auto* c = pod.mutable_spec()->add_containers();
  c->set_name("app");
  c->set_image("app:v1");
  return pod;
}

TEST(ResolveIdentity, AsWhomAContainerRuns) {
  const int kNetBind = 10;
  struct Case {
    std::string name;
    std::function<void(api::Pod*, Image*)> set;
    int64_t uid, gid;
  } cases[] = {
      {"nothing said: nobody", [](api::Pod*, Image*) {}, 65534, 65534},
      {"the image's user", [](api::Pod*, Image* i) { i->config.user = "1000:2000"; }, 1000, 2000},
      {"the image's uid alone: the root group", [](api::Pod*, Image* i) { i->config.user = "7"; },
       7, 0},
      {"the pod's context over the image",
       [](api::Pod* p, Image* i) {
         i->config.user = "1000";
         p->mutable_spec()->mutable_security_context()->set_run_as_user(2000);
         p->mutable_spec()->mutable_security_context()->set_run_as_group(3000);
       },
       2000, 3000},
      {"the container's context over the pod's",
       [](api::Pod* p, Image*) {
         p->mutable_spec()->mutable_security_context()->set_run_as_user(2000);
         p->mutable_spec()->mutable_containers(0)->mutable_security_context()->set_run_as_user(0);
       },
       0, 0},
  };
  for (const auto& c : cases) {
    api::Pod pod = PodWith();
    Image image;
    c.set(&pod, &image);
    auto id = ResolveIdentity(pod, pod.spec().containers(0), image, Root());
    ASSERT_TRUE(id.ok()) << c.name << ": " << id.status();
    EXPECT_EQ(id->uid, c.uid) << c.name;
    EXPECT_EQ(id->gid, c.gid) << c.name;
    EXPECT_TRUE(id->limit_capabilities) << c.name;
    EXPECT_EQ(id->capabilities, std::vector<int>{kNetBind}) << c.name;
    EXPECT_FALSE(id->no_new_privs) << c.name;
  }
}

TEST(ResolveIdentity, SecurityContextFlags) {
  api::Pod pod = PodWith();
  auto* psc = pod.mutable_spec()->mutable_security_context();
  psc->add_supplemental_groups(5);
  psc->set_fs_group(6);
  auto* sc = pod.mutable_spec()->mutable_containers(0)->mutable_security_context();
  sc->set_allow_privilege_escalation(false);
  sc->mutable_capabilities()->add_drop("ALL");
  sc->mutable_capabilities()->add_add("CAP_CHOWN");
  auto id = ResolveIdentity(pod, pod.spec().containers(0), Image(), Root());
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_TRUE(id->no_new_privs);
  EXPECT_EQ(id->capabilities, std::vector<int>{0});
  EXPECT_EQ(id->groups, (std::vector<int64_t>{5, 6}));

  sc->mutable_capabilities()->add_add("NOT_A_CAP");
  auto bad = ResolveIdentity(pod, pod.spec().containers(0), Image(), Root());
  EXPECT_EQ(bad.status().message(), "unknown capability \"NOT_A_CAP\"");
}

TEST(ResolveIdentity, RunAsNonRootRefusesRoot) {
  api::Pod pod = PodWith();
  pod.mutable_spec()->mutable_security_context()->set_run_as_non_root(true);
  Image image;
  image.config.user = "0";
  auto id = ResolveIdentity(pod, pod.spec().containers(0), image, Root());
  const std::string where = fmt::format("(pod: \"{}_{}({})\", container: {})",
                                        pod.metadata().name(), pod.metadata().namespace_(),
                                        pod.metadata().uid(), pod.spec().containers(0).name());
  EXPECT_EQ(id.status().message(),
            "container has runAsNonRoot and image will run as root " + where);
  pod.mutable_spec()->mutable_security_context()->set_run_as_user(0);
  EXPECT_EQ(ResolveIdentity(pod, pod.spec().containers(0), image, Root()).status().message(),
            "container's runAsUser breaks non-root policy " + where);
  pod.mutable_spec()->mutable_security_context()->clear_run_as_user();
  image.config.user = "";  // the default user is not root
  EXPECT_TRUE(ResolveIdentity(pod, pod.spec().containers(0), image, Root()).ok());
  image.config.user = "root";
  EXPECT_EQ(ResolveIdentity(pod, pod.spec().containers(0), image, Root()).status().message(),
            "container has runAsNonRoot and image has non-numeric user (root), cannot verify "
            "user is non-root " +
                where);
}

TEST(ResolveIdentity, ImageUsersByNameComeFromTheImagesOwnFiles) {
  const fs::path root =
      fs::temp_directory_path() / ("sandbox_test.users." + std::to_string(getpid()));
  fs::create_directories(root / "etc");
  std::ofstream(root / "etc/passwd") << "root:x:0:0:root:/root:/bin/sh\n"
                                        "# a comment\n"
                                        "web:x:1000:1001:web:/home/web:/bin/sh\n";
  std::ofstream(root / "etc/group") << "root:x:0:\nweb:x:1001:\nstaff:x:50:web,other\n"
                                       "audio:x:29:other\n";
  struct Case {
    std::string user;
    int64_t uid, gid;
    std::vector<int64_t> groups;
    std::string error;
  } cases[] = {
      {"web", 1000, 1001, {50}, ""},
      {"1000", 1000, 1001, {50}, ""},  // a number found in passwd brings its group
      {"web:staff", 1000, 50, {}, ""},
      {"web:7", 1000, 7, {50}, ""},
      {"42", 42, 0, {}, ""},  // a number found nowhere is taken as it is
      {"ghost", 0, 0, {}, "unable to find user ghost: no matching entries in passwd file"},
      {"web:ghosts", 0, 0, {}, "unable to find group ghosts: no matching entries in group file"},
      {"-1", 0, 0, {}, "image user \"-1\" is a negative UID"},
  };
  for (const auto& c : cases) {
    api::Pod pod = PodWith();
    Image image;
    image.root = root.string();
    image.layers = {image.root};
    image.config.user = c.user;
    auto id = ResolveIdentity(pod, pod.spec().containers(0), image, Root());
    if (!c.error.empty()) {
      EXPECT_EQ(id.status().message(), c.error) << c.user;
      // A user the pod names itself is not looked up.
      pod.mutable_spec()->mutable_security_context()->set_run_as_user(5);
      auto named = ResolveIdentity(pod, pod.spec().containers(0), image, Root());
      ASSERT_TRUE(named.ok()) << c.user << ": " << named.status();
      EXPECT_EQ(named->uid, 5);
      EXPECT_EQ(named->gid, 0);
      continue;
    }
    ASSERT_TRUE(id.ok()) << c.user << ": " << id.status();
    EXPECT_EQ(id->uid, c.uid) << c.user;
    EXPECT_EQ(id->gid, c.gid) << c.user;
    EXPECT_EQ(id->groups, c.groups) << c.user;
  }
  // A uid the pod names is looked up in the image's users too: its group, not the image user's.
  api::Pod pod = PodWith();
  pod.mutable_spec()->mutable_security_context()->set_run_as_user(1000);
  Image image;
  image.root = root.string();
  image.layers = {image.root};
  image.config.user = "root";
  auto id = ResolveIdentity(pod, pod.spec().containers(0), image, Root());
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(id->uid, 1000);
  EXPECT_EQ(id->gid, 1001);
  EXPECT_EQ(id->groups, std::vector<int64_t>{50});
  fs::remove_all(root);
}

TEST(ResolveIdentity, AnAgentThatIsNotRootChangesNothing) {
  api::Pod pod = PodWith();
  pod.mutable_spec()->mutable_security_context()->set_run_as_user(1000);
  auto id = ResolveIdentity(pod, pod.spec().containers(0), Image(), HostIsolation());
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(id->uid, -1);
  EXPECT_FALSE(id->limit_capabilities);
}

class SandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("sandbox_test." + std::to_string(getpid()));
    fs::remove_all(dir_);
    // A node with programs, a loader cache, secrets and a resolver, none of which a container
    // sees but the resolver.
    Write(host() + "/usr/bin/sh", 0755);
    Write(host() + "/etc/ld.so.cache", 0644);
    Write(host() + "/etc/shadow", 0600);
    Write(host() + "/etc/resolv.conf", 0644);
    // An image with merged /usr: bin -> usr/bin.
    image_.layers = {image_.root};
    Write(image_.root + "/usr/bin/sh", 0755);
    fs::create_symlink("usr/bin", image_.root + "/bin");
    Write(image_.root + "/usr/bin/myapp", 0755);
    Write(image_.root + "/data/page.html", 0644);
    Write(image_.root + "/image.json", 0644);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string host() const { return (dir_ / "host").string(); }
  static void Write(const std::string& path, int mode) {
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path) << "x";
    chmod(path.c_str(), static_cast<mode_t>(mode));
  }
  SandboxInputs Inputs(const api::Pod& pod) {
    SandboxInputs in;
    in.pod = &pod;
    in.container = &pod.spec().containers(0);
    in.image = &image_;
    in.root = (dir_ / "rootfs").string();
    in.volumes_dir = (dir_ / "volumes").string();
    in.pod_ip = "127.1.0.5";
    in.host_root = host();
    return in;
  }
  static const MountStep* Find(const SandboxSpec& spec, const std::string& target) {
    for (const auto& s : spec.steps) {
      if (s.target == target) return &s;
    }
    return nullptr;
  }

  fs::path dir_;
  Image image_{
      .ref = {},
      .root = (fs::temp_directory_path() / ("sandbox_test." + std::to_string(getpid())) / "image")
                  .string()};
};

// The root is the image alone under a writable layer: nothing of the node's but its resolver.
TEST_F(SandboxTest, TheRootIsTheImageUnderAWritableLayer) {
  api::Pod pod = PodWith();
  auto spec = BuildSandbox(Inputs(pod));
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(spec->isolated);
  EXPECT_EQ(spec->hostname, "web");
  EXPECT_EQ(spec->image_layers, image_.layers);
  EXPECT_FALSE(spec->read_only_root);
  // The image's files are the root's own: no step for them.
  for (const char* own : {"/bin", "/usr", "/data", "/image.json"}) {
    EXPECT_EQ(Find(*spec, own), nullptr) << own;
  }
  // /etc: made files and the node's resolver, never the node's others.
  EXPECT_EQ(Find(*spec, "/etc"), nullptr);
  EXPECT_EQ(Find(*spec, "/etc/ld.so.cache"), nullptr);
  EXPECT_EQ(Find(*spec, "/etc/shadow"), nullptr);
  ASSERT_NE(Find(*spec, "/etc/resolv.conf"), nullptr);
  EXPECT_EQ(Find(*spec, "/etc/resolv.conf")->source, host() + "/etc/resolv.conf");
  ASSERT_NE(Find(*spec, "/etc/passwd"), nullptr);
  ASSERT_NE(Find(*spec, "/etc/hosts"), nullptr);
  EXPECT_NE(Find(*spec, "/etc/hosts")->source.find("127.1.0.5\tweb"), std::string::npos);
  EXPECT_EQ(Find(*spec, "/tmp")->kind, Kind::kTmpfs);
  EXPECT_EQ(Find(*spec, "/proc")->kind, Kind::kProc);
  for (const auto& s : spec->steps) {
    if (s.kind == Kind::kBind) {
      EXPECT_TRUE(s.source.rfind("/dev/", 0) == 0 || s.target == "/etc/resolv.conf")
          << s.source << " at " << s.target;
    }
  }

  // An image with users of its own keeps them.
  Write(image_.root + "/etc/passwd", 0644);
  auto with_users = BuildSandbox(Inputs(pod));
  ASSERT_TRUE(with_users.ok());
  EXPECT_EQ(Find(*with_users, "/etc/passwd"), nullptr);
  EXPECT_NE(Find(*with_users, "/etc/group"), nullptr);

  // A read-only root is that too.
  pod.mutable_spec()
      ->mutable_containers(0)
      ->mutable_security_context()
      ->set_read_only_root_filesystem(true);
  auto read_only = BuildSandbox(Inputs(pod));
  ASSERT_TRUE(read_only.ok()) << read_only.status();
  EXPECT_TRUE(read_only->read_only_root);
  EXPECT_EQ(read_only->image_layers, image_.layers);
}

// An image in layers stacks them; a layer's path overlayfs cannot name is refused.
TEST_F(SandboxTest, TheRootStacksTheImagesLayers) {
  api::Pod pod = PodWith();
  Image layered = image_;
  layered.root.clear();
  layered.layers = {(dir_ / "layers/top").string(), (dir_ / "layers/base").string()};
  SandboxInputs in = Inputs(pod);
  in.image = &layered;
  auto spec = BuildSandbox(in);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->image_layers, layered.layers);
  layered.layers.push_back((dir_ / "layers/a:b").string());
  EXPECT_THAT(std::string(BuildSandbox(in).status().message()),
              ::testing::HasSubstr("its path holds ':' or ','"));
  in.overlay = false;
  EXPECT_THAT(std::string(BuildSandbox(in).status().message()),
              ::testing::HasSubstr("which only overlayfs stacks"));
}

TEST_F(SandboxTest, WithoutOverlayfsTheImagesEntriesAreBoundReadOnly) {
  api::Pod pod = PodWith();
  SandboxInputs plain = Inputs(pod);
  plain.overlay = false;
  auto spec = BuildSandbox(plain);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(spec->image_layers.empty());
  EXPECT_EQ(Find(*spec, "/usr")->kind, Kind::kBind);
  EXPECT_EQ(Find(*spec, "/usr")->source, image_.root + "/usr");
  ASSERT_NE(Find(*spec, "/data"), nullptr);
  EXPECT_EQ(Find(*spec, "/data")->source, image_.root + "/data");
  EXPECT_TRUE(Find(*spec, "/data")->read_only);
  // An image's link stays a link (bound, it would be followed on the node).
  ASSERT_NE(Find(*spec, "/bin"), nullptr);
  EXPECT_EQ(Find(*spec, "/bin")->kind, Kind::kSymlink);
  EXPECT_EQ(Find(*spec, "/bin")->source, "usr/bin");
  // The sandbox's own folders are its: the image's /etc is not bound whole.
  EXPECT_EQ(Find(*spec, "/etc"), nullptr);
}

TEST_F(SandboxTest, VolumesAreMountedWhereTheContainerAsks) {
  api::Pod pod = PodWith();
  auto* shared = pod.mutable_spec()->add_volumes();
  shared->set_name("shared");
  shared->mutable_empty_dir();
  auto* logs = pod.mutable_spec()->add_volumes();
  logs->set_name("logs");
  logs->mutable_host_path()->set_path(host() + "/var/log/app");
  logs->mutable_host_path()->set_type("DirectoryOrCreate");
  auto* c = pod.mutable_spec()->mutable_containers(0);
  auto* m1 = c->add_volume_mounts();
  m1->set_name("shared");
  m1->set_mount_path("/cache");
  auto* m2 = c->add_volume_mounts();
  m2->set_name("logs");
  m2->set_mount_path("/var/log");
  m2->set_read_only(true);
  auto spec = BuildSandbox(Inputs(pod));
  ASSERT_TRUE(spec.ok()) << spec.status();
  const MountStep* cache = Find(*spec, "/cache");
  ASSERT_NE(cache, nullptr);
  EXPECT_EQ(cache->source, (dir_ / "volumes" / "shared").string());
  EXPECT_FALSE(cache->read_only);
  struct stat st;
  ASSERT_EQ(stat(cache->source.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0777u);  // any of the pod's users may write
  const MountStep* log = Find(*spec, "/var/log");
  ASSERT_NE(log, nullptr);
  EXPECT_TRUE(log->read_only);
  EXPECT_TRUE(fs::is_directory(host() + "/var/log/app"));
  // Volumes come last: on top of everything else.
  EXPECT_EQ(spec->steps.back().target, "/var/log");

  logs->mutable_host_path()->set_type("File");
  auto refused = BuildSandbox(Inputs(pod));
  EXPECT_EQ(refused.status().message(),
            "MountVolume.SetUp failed for volume \"logs\" : hostPath type check failed: " + host() +
                "/var/log/app is not a file");
}

TEST_F(SandboxTest, CommandsAreFoundWhereTheContainerLooks) {
  api::Pod pod = PodWith();
  auto spec = BuildSandbox(Inputs(pod));
  ASSERT_TRUE(spec.ok());
  const std::vector<std::string> env = {"PATH=/usr/local/bin:/usr/bin:/bin"};
  EXPECT_EQ(*ResolveInSandbox("myapp", env, *spec), "/usr/bin/myapp");
  EXPECT_EQ(*ResolveInSandbox("sh", env, *spec), "/usr/bin/sh");
  EXPECT_EQ(*ResolveInSandbox("/bin/sh", env, *spec), "/bin/sh");  // through the image's link
  Write(image_.root + "/app/run", 0755);
  EXPECT_EQ(*ResolveInSandbox("/app/run", env, *spec), "/app/run");  // the image's own root
  EXPECT_EQ(ResolveInSandbox("nope", env, *spec).status().message(),
            "exec: \"nope\": executable file not found in $PATH");
  EXPECT_EQ(ResolveInSandbox("/etc/shadow", env, *spec).status().message(),
            "exec: \"/etc/shadow\": stat /etc/shadow: no such file or directory");
  // `..` stops at the container's root: the image's folder's neighbours are not looked at.
  Write(image_.root + "/../outside", 0755);
  EXPECT_FALSE(ResolveInSandbox("/../outside", env, *spec).ok());
  EXPECT_EQ(*ResolveInSandbox("/../app/run", env, *spec), "/../app/run");
  // The private /tmp starts empty whatever the image holds there.
  Write(image_.root + "/tmp/tool", 0755);
  EXPECT_FALSE(ResolveInSandbox("/tmp/tool", env, *spec).ok());
}

TEST_F(SandboxTest, TheSpecSurvivesItsJson) {
  api::Pod pod = PodWith();
  auto spec = BuildSandbox(Inputs(pod));
  ASSERT_TRUE(spec.ok());
  spec->identity.uid = 1000;
  spec->identity.capabilities = {10};
  SandboxSpec back;
  std::string error;
  ASSERT_TRUE(SandboxFromJson(ToJson(*spec), &back, &error)) << error;
  EXPECT_EQ(ToJson(back), ToJson(*spec));
  EXPECT_FALSE(SandboxFromJson(nlohmann::json::array(), &back, &error));
  EXPECT_EQ(error, "a sandbox must be an object with a list of steps");
}

}  // namespace
}  // namespace mkube::agent::runtime
