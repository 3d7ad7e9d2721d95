#include "agent/node/usage.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "api/object.h"

namespace mkube::agent::node {

std::optional<ProcStat> ParseProcStat(std::string_view text) {
  // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses, so the fields
  // start after the last ')'.
  const size_t close = text.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  std::vector<absl::string_view> f = absl::StrSplit(
      absl::string_view(text.data() + close + 1, text.size() - close - 1), ' ', absl::SkipEmpty());
  // f[0] is field 3 (state); field N is f[N - 3].
  if (f.size() < 22) return std::nullopt;
  ProcStat s;
  int64_t pgrp = 0;
  const bool ok = absl::SimpleAtoi(f[2], &pgrp) && absl::SimpleAtoi(f[11], &s.utime) &&
                  absl::SimpleAtoi(f[12], &s.stime) && absl::SimpleAtoi(f[13], &s.cutime) &&
                  absl::SimpleAtoi(f[14], &s.cstime) && absl::SimpleAtoi(f[21], &s.rss_pages);
  if (!ok) return std::nullopt;
  s.pgrp = static_cast<pid_t>(pgrp);
  return s;
}

namespace {

std::optional<ProcStat> ReadStat(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;  // the process ended in the meantime
  std::stringstream text;
  text << in.rdbuf();
  return ParseProcStat(text.str());
}

}  // namespace

ProcReader::ProcReader(std::string root)
    : root_(std::move(root)),
      tick_ns_(1'000'000'000 / std::max<long>(sysconf(_SC_CLK_TCK), 1)),
      page_bytes_(std::max<long>(sysconf(_SC_PAGESIZE), 1)) {}

Usage ProcReader::UsageOf(const ProcStat& s) const {
  return {.cpu_ns = (s.utime + s.stime + s.cutime + s.cstime) * tick_ns_,
          .memory_bytes = s.rss_pages * page_bytes_};
}

std::map<pid_t, Usage> ProcReader::Groups(const std::set<pid_t>& groups) const {
  std::map<pid_t, Usage> out;
  if (groups.empty()) return out;
  DIR* dir = opendir(root_.c_str());
  if (!dir) return out;
  while (dirent* e = readdir(dir)) {
    int64_t pid = 0;
    if (!absl::SimpleAtoi(e->d_name, &pid)) continue;
    auto s = ReadStat(root_ + "/" + e->d_name + "/stat");
    if (!s || !groups.contains(s->pgrp)) continue;
    const Usage u = UsageOf(*s);
    Usage& sum = out[s->pgrp];
    sum.cpu_ns += u.cpu_ns;
    sum.memory_bytes += u.memory_bytes;
  }
  closedir(dir);
  return out;
}

std::optional<Usage> ProcReader::Process(pid_t pid) const {
  auto s = ReadStat(root_ + "/" + std::to_string(pid) + "/stat");
  if (!s) return std::nullopt;
  // Not its waited-for children: the agent's are container monitors, whose time (their
  // containers') is counted with the containers already.
  s->cutime = s->cstime = 0;
  return UsageOf(*s);
}

std::string Nanocores(int64_t nanocores) { return std::to_string(nanocores) + "n"; }
std::string Kibibytes(int64_t bytes) { return std::to_string(bytes / 1024) + "Ki"; }

UsageSampler::UsageSampler(Containers containers, ProcReader reader, client::Clock* clock,
                           pid_t self)
    : containers_(std::move(containers)), reader_(std::move(reader)), clock_(clock), self_(self) {}

UsageSampler::~UsageSampler() { Stop(); }

void UsageSampler::Sample() {
  const std::vector<RunningContainer> running = containers_();
  std::set<pid_t> groups;
  for (const auto& c : running) groups.insert(c.pgid);
  const std::map<pid_t, Usage> usage = reader_.Groups(groups);
  const Usage agent = reader_.Process(self_).value_or(Usage{});

  Snapshot now;
  now.at = clock_->Now();
  now.node_cpu_ns = agent.cpu_ns;
  now.node_memory = agent.memory_bytes;
  for (const auto& c : running) {
    auto u = usage.find(c.pgid);
    if (u == usage.end()) continue;  // it ended just now
    now.node_cpu_ns += u->second.cpu_ns;
    now.node_memory += u->second.memory_bytes;
    now.containers[c.uid + "/" + c.container + "/" + std::to_string(c.pgid)] = {c, u->second};
  }
  absl::MutexLock lock(&mu_);
  if (latest_) {
    for (const auto& [key, m] : latest_->containers) {
      if (!now.containers.contains(key)) retired_cpu_ns_ += m.usage.cpu_ns;
    }
  }
  now.node_cpu_ns += retired_cpu_ns_;
  previous_ = std::move(latest_);
  latest_ = std::move(now);
}

void UsageSampler::Start(absl::Duration period) {
  thread_ = std::thread([this, period] {
    for (;;) {
      Sample();
      absl::MutexLock lock(&mu_);
      if (clock_->AwaitWithTimeout(&mu_, absl::Condition(&stopping_), period)) return;
    }
  });
}

void UsageSampler::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

SummaryReply UsageSampler::Summary() const {
  SummaryReply out;
  absl::MutexLock lock(&mu_);
  if (!previous_ || !latest_ || latest_->at <= previous_->at) return out;
  const absl::Duration window = latest_->at - previous_->at;
  const std::string timestamp = api::Rfc3339(latest_->at);
  const std::string window_text = absl::FormatDuration(window);
  auto rate = [&](int64_t before, int64_t after) {
    const double ns = static_cast<double>(std::max<int64_t>(after - before, 0));
    return static_cast<int64_t>(ns / absl::ToDoubleSeconds(window));
  };
  api::NodeMetrics* node = out.mutable_node();
  node->set_timestamp(timestamp);
  node->set_window(window_text);
  (*node->mutable_usage())["cpu"] = Nanocores(rate(previous_->node_cpu_ns, latest_->node_cpu_ns));
  (*node->mutable_usage())["memory"] = Kibibytes(latest_->node_memory);

  std::map<std::string, api::PodMetrics*> pods;  // by uid
  for (const auto& [key, m] : latest_->containers) {
    auto before = previous_->containers.find(key);
    if (before == previous_->containers.end()) continue;  // measured once so far
    api::PodMetrics*& pod = pods[m.c.uid];
    if (!pod) {
      pod = out.add_pods();
      pod->mutable_metadata()->set_namespace_(m.c.ns);
      pod->mutable_metadata()->set_name(m.c.pod);
      pod->mutable_metadata()->set_uid(m.c.uid);
      pod->set_timestamp(timestamp);
      pod->set_window(window_text);
    }
    api::ContainerMetrics* c = pod->add_containers();
    c->set_name(m.c.container);
    (*c->mutable_usage())["cpu"] = Nanocores(rate(before->second.usage.cpu_ns, m.usage.cpu_ns));
    (*c->mutable_usage())["memory"] = Kibibytes(m.usage.memory_bytes);
  }
  return out;
}

}  // namespace mkube::agent::node
