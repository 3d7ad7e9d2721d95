#pragma once

// What the benchmark clients share: a process's CPU time and resident memory read from /proc
// (what they report of the daemon they measure), and their namespace.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "client/client.h"
#include "fmt/format.h"
#include "proto/api/core.pb.h"

namespace mkube::bench {

// utime + stime of a process, in seconds (0 when it cannot be read).
inline double CpuSeconds(int pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream fields(text.substr(paren + 2));
  std::vector<std::string> f;
  for (std::string s; fields >> s;) f.push_back(s);
  if (f.size() < 13) return 0;
  return static_cast<double>(std::stoll(f[11]) + std::stoll(f[12])) /
         static_cast<double>(sysconf(_SC_CLK_TCK));
}

// A process's resident memory now (VmRSS), or the most it has held (VmHWM), in MiB.
inline int64_t RssMib(int pid, const char* field = "VmRSS:") {
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  const size_t n = std::string_view(field).size();
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field, 0) == 0) return std::stoll(line.substr(n)) / 1024;
  }
  return 0;
}
inline int64_t PeakRssMib(int pid) { return RssMib(pid, "VmHWM:"); }

// Creates the namespace "bench" if it is not there; false (said on stderr) when it cannot.
inline bool MakeBenchNamespace(client::ApiClient* client, const char* tool) {
  api::Namespace ns;
  ns.mutable_metadata()->set_name("bench");
  auto r = client->Create<api::Namespace>("namespaces", "", ns);
  if (r.ok() || r.status().code() == absl::StatusCode::kAlreadyExists) return true;
  std::fprintf(stderr, "%s: namespace bench: %s\n", tool, r.status().ToString().c_str());
  return false;
}

}  // namespace mkube::bench
