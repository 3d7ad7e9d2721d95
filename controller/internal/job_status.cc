#include "controller/internal/job_status.h"

#include <string>

namespace mkube::controller {
namespace {

const api::Condition* JobCondition(const api::JobStatus& status, const std::string& type) {
  for (const auto& c : status.conditions()) {
    if (c.type() == type && c.status() == "True") return &c;
  }
  return nullptr;
}

}  // namespace

const api::Condition* FinishedCondition(const api::JobStatus& status) {
  const api::Condition* c = JobCondition(status, "Complete");
  return c ? c : JobCondition(status, "Failed");
}

}  // namespace mkube::controller
