#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "scheduler/framework/filter.h"
#include "scheduler/framework/interface.h"

namespace mkube::scheduler::framework {

struct WeightedScorePlugin {
  const ScorePlugin* plugin;
  int64_t weight;
};

// One scheduler profile (a schedulerName): its plugins at each extension point, in order.
struct Profile {
  std::string scheduler_name = "default-scheduler";
  std::vector<PluginPtr> owned;  // every plugin the points below refer to
  FilterChain filters;
  std::vector<const PreScorePlugin*> pre_scores;
  std::vector<WeightedScorePlugin> scores;
  // Of the feasible nodes, how many to find before scoring, in percent of all nodes; 0:
  // kube-scheduler's adaptive default (50 - nodes/125, at least 5).
  int percentage_of_nodes_to_score = 0;
};

// How many feasible nodes to look for among `num_nodes`, as kube-scheduler's
// numFeasibleNodesToFind: all of them below 100 nodes, else the percentage, at least 100.
size_t NumFeasibleNodesToFind(size_t num_nodes, int percentage);

// One score plugin's part in a node's total.
struct PluginScore {
  std::string plugin;
  int64_t raw = 0;         // what Score said
  int64_t normalized = 0;  // after NormalizeScore
  int64_t weight = 0;
  int64_t weighted = 0;  // normalized × weight
};
struct NodeScore {
  const NodeInfo* node = nullptr;
  int64_t total = 0;
  std::vector<PluginScore> plugins;  // filled only when explaining
};

struct ScheduleOptions {
  bool explain = false;    // keep every plugin's score, and filter every node
  size_t start_index = 0;  // where in the snapshot's nodes to start filtering
};

// What one scheduling attempt found.
struct ScheduleResult {
  Status status;  // ok when `node` was chosen
  std::string node;
  Diagnosis diagnosis;   // why the other nodes were rejected
  size_t evaluated = 0;  // nodes filtered
  size_t next_start_index = 0;
  std::vector<NodeScore> scores;  // of the feasible nodes evaluated, best first
};

// Filters, scores and picks a node for the pod; ties among the best are broken at random.
ScheduleResult Schedule(const Profile& profile, const api::Pod& pod, const Snapshot& snapshot,
                        const ScheduleOptions& options, std::mt19937_64& rng);

}  // namespace mkube::scheduler::framework
