#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/clock.h"
#include "proto/agent/stats.pb.h"

namespace mkube::agent::node {

// What /proc/<pid>/stat says of one process that matters here.
struct ProcStat {
  pid_t pgrp = 0;
  // Clock ticks spent by the process, and by its children it has waited for.
  int64_t utime = 0, stime = 0, cutime = 0, cstime = 0;
  int64_t rss_pages = 0;
};
// Parses the text of /proc/<pid>/stat (the command, in parentheses, may hold anything).
std::optional<ProcStat> ParseProcStat(std::string_view text);

// CPU time used so far and memory resident now.
struct Usage {
  int64_t cpu_ns = 0;
  int64_t memory_bytes = 0;
};

// Reads processes' usage from /proc (or from a folder laid out like it, in tests).
class ProcReader {
 public:
  explicit ProcReader(std::string root = "/proc");
  // For each of `groups` (process group ids): the sum over every process in it. A group
  // none of whose processes is left is absent.
  std::map<pid_t, Usage> Groups(const std::set<pid_t>& groups) const;
  // One process alone, without the children it waited for (the agent itself).
  std::optional<Usage> Process(pid_t pid) const;

 private:
  Usage UsageOf(const ProcStat& s) const;
  std::string root_;
  int64_t tick_ns_, page_bytes_;
};

// A container running on this node, as the pod workers know it.
struct RunningContainer {
  std::string ns, pod, uid, container;
  pid_t pgid = 0;  // its process group
};

// Samples the CPU and memory of the agent and of every running container each `period`,
// and answers the Stats service from the last two samples: a CPU rate over the time between
// them (the "window"), memory as of the newest. A container first seen in the newest sample
// has no rate yet and is left out, as metrics-server leaves out what it has measured once.
// The node's figure is the agent plus its containers (all the processes it is answerable
// for; nodes may share a machine), its CPU counted over the whole window: a container that
// started within it counts from its start, one that ended counts up to its last sample.
class UsageSampler {
 public:
  using Containers = std::function<std::vector<RunningContainer>()>;
  UsageSampler(Containers containers, ProcReader reader, client::Clock* clock, pid_t self);
  ~UsageSampler();

  // Takes one sample now.
  void Sample() ABSL_LOCKS_EXCLUDED(mu_);
  // Samples now and then every `period` on a thread of its own, until Stop.
  void Start(absl::Duration period) ABSL_LOCKS_EXCLUDED(mu_);
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  // The node's and pods' metrics; empty (no node) until there are two samples.
  SummaryReply Summary() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Measured {
    RunningContainer c;
    Usage usage;
  };
  struct Snapshot {
    absl::Time at;
    int64_t node_cpu_ns = 0;  // cumulative: the agent, live containers and ended ones
    int64_t node_memory = 0;
    std::map<std::string, Measured> containers;  // by uid/container/pgid
  };

  Containers containers_;
  const ProcReader reader_;
  client::Clock* const clock_;
  const pid_t self_;
  mutable absl::Mutex mu_;
  std::optional<Snapshot> previous_ ABSL_GUARDED_BY(mu_), latest_ ABSL_GUARDED_BY(mu_);
  // CPU of containers that ended, as last sampled: keeps the node's total from going back.
  int64_t retired_cpu_ns_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

// Kubernetes' quantities for the usage: "<n>n" nanocores, "<n>Ki" of memory.
std::string Nanocores(int64_t nanocores);
std::string Kibibytes(int64_t bytes);

}  // namespace mkube::agent::node
