#pragma once

#include <string>

#include "scheduler/framework/framework.h"

namespace mkube::scheduler::framework {

// A scheduling attempt for people, as `describe pod` shows it under "Scheduling:" and
// `mkubectl schedule --dry-run` prints it: each node a filter rejected and why, then the
// best `top` nodes with each score plugin's raw, normalized and weighted score and the total,
// then the choice.
std::string ExplainText(const ScheduleResult& result, size_t num_nodes, size_t top = 5);

}  // namespace mkube::scheduler::framework
