// mkube-image-build: images made from files on this machine, written as an OCI image layout
// tarball (the demo images are built so at build time):
//   mkube-image-build --spec SPEC.json [--set NAME=VALUE ...] --out FILE.tar
#include <cstdio>
#include <fstream>
#include <sstream>

#include "CLI/CLI.hpp"
#include "agent/image/image_build.h"

int main(int argc, char** argv) {
  std::string spec_file, out;
  std::vector<std::string> sets;
  CLI::App app{"mkube-image-build: OCI images made from files on this machine"};
  app.add_option("--spec", spec_file, "The images: a JSON list (see agent/image/image_build.h)")
      ->required();
  app.add_option("--set", sets, "NAME=VALUE: ${NAME} in the spec becomes VALUE");
  app.add_option("--out", out, "The OCI image layout tarball to write")->required();
  CLI11_PARSE(app, argc, argv);
  std::map<std::string, std::string> vars;
  for (const auto& s : sets) {
    const size_t eq = s.find('=');
    if (eq == std::string::npos) {
      std::fprintf(stderr, "mkube-image-build: --set %s: expected NAME=VALUE\n", s.c_str());
      return 2;
    }
    vars[s.substr(0, eq)] = s.substr(eq + 1);
  }
  std::ifstream in(spec_file);
  if (!in) {
    std::fprintf(stderr, "mkube-image-build: cannot read %s\n", spec_file.c_str());
    return 1;
  }
  std::stringstream text;
  text << in.rdbuf();
  auto specs = mkube::agent::image::ParseImageSpecs(text.str(), vars);
  if (!specs.ok()) {
    std::fprintf(stderr, "mkube-image-build: %s: %s\n", spec_file.c_str(),
                 std::string(specs.status().message()).c_str());
    return 1;
  }
  auto built = mkube::agent::image::WriteImageLayout(*specs, out);
  if (!built.ok()) {
    std::fprintf(stderr, "mkube-image-build: %s\n", std::string(built.status().message()).c_str());
    return 1;
  }
  for (const auto& b : *built) {
    std::printf("image %s: %lld files, %lld bytes (%s)\n", b.name.c_str(),
                static_cast<long long>(b.files), static_cast<long long>(b.bytes), b.digest.c_str());
  }
  return 0;
}
