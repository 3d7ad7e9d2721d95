#pragma once

#include "proto/api/apps.pb.h"

namespace mkube::controller {

// The Complete or Failed condition (status True) of a finished Job; null while it runs. Read
// by the Job controller (a finished job runs no pod, and its TTL counts from then) and by the
// CronJob controller (which of its jobs are still active, which count toward a history limit).
const api::Condition* FinishedCondition(const api::JobStatus& status);

}  // namespace mkube::controller
