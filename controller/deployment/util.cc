#include "controller/deployment/util.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/numbers.h"
#include "api/object.h"
#include "controller/internal/int_or_percent.h"

namespace mkube::controller::deployment {
namespace {

bool IsRollingUpdate(const api::Deployment& d) {
  return d.spec().strategy().type() == "RollingUpdate";
}

// maxSurge and maxUnavailable resolved against spec.replicas (kube's ResolveFenceposts).
std::pair<int32_t, int32_t> Fenceposts(const api::Deployment& d) {
  const auto& ru = d.spec().strategy().rolling_update();
  const int32_t replicas = d.spec().replicas();
  const int32_t surge = Scaled(ru.max_surge(), replicas, true);
  int32_t unavailable = Scaled(ru.max_unavailable(), replicas, false);
  if (surge == 0 && unavailable == 0) unavailable = 1;
  return {surge, unavailable};
}

}  // namespace

int32_t MaxSurge(const api::Deployment& d) {
  return IsRollingUpdate(d) ? Fenceposts(d).first : 0;
}

int32_t MaxUnavailable(const api::Deployment& d) {
  if (!IsRollingUpdate(d) || d.spec().replicas() == 0) return 0;
  return std::min(Fenceposts(d).second, d.spec().replicas());
}

bool EqualIgnoreHash(const api::PodTemplateSpec& a, const api::PodTemplateSpec& b) {
  api::PodTemplateSpec x = a, y = b;
  x.mutable_metadata()->mutable_labels()->erase(kPodTemplateHash);
  y.mutable_metadata()->mutable_labels()->erase(kPodTemplateHash);
  return api::Equal(x, y);
}

int64_t Revision(const api::ReplicaSet& rs) {
  auto it = rs.metadata().annotations().find(kRevision);
  int64_t v = 0;
  if (it == rs.metadata().annotations().end() || !absl::SimpleAtoi(it->second, &v)) return 0;
  return v;
}

int64_t MaxRevision(const std::vector<RSPtr>& sets) {
  int64_t most = 0;
  for (const auto& rs : sets) most = std::max(most, Revision(*rs));
  return most;
}

RSPtr FindNewReplicaSet(const api::Deployment& d, const std::vector<RSPtr>& sets) {
  RSPtr found;
  for (const auto& rs : sets) {
    if (!EqualIgnoreHash(rs->spec().template_(), d.spec().template_())) continue;
    // Several equal ones happen only after a hash collision: the oldest is the one in use.
    if (!found || rs->metadata().creation_timestamp() < found->metadata().creation_timestamp() ||
        (rs->metadata().creation_timestamp() == found->metadata().creation_timestamp() &&
         rs->metadata().name() < found->metadata().name())) {
      found = rs;
    }
  }
  return found;
}

std::vector<RSPtr> Active(const std::vector<RSPtr>& sets) {
  std::vector<RSPtr> out;
  for (const auto& rs : sets) {
    if (rs && rs->spec().replicas() > 0) out.push_back(rs);
  }
  return out;
}

namespace {
template <typename F>
int32_t Sum(const std::vector<RSPtr>& sets, F f) {
  int32_t n = 0;
  for (const auto& rs : sets) {
    if (rs) n += f(*rs);
  }
  return n;
}
}  // namespace

int32_t SpecReplicas(const std::vector<RSPtr>& sets) {
  return Sum(sets, [](const api::ReplicaSet& rs) { return rs.spec().replicas(); });
}
int32_t StatusReplicas(const std::vector<RSPtr>& sets) {
  return Sum(sets, [](const api::ReplicaSet& rs) { return rs.status().replicas(); });
}
int32_t ReadyReplicas(const std::vector<RSPtr>& sets) {
  return Sum(sets, [](const api::ReplicaSet& rs) { return rs.status().ready_replicas(); });
}
int32_t AvailableReplicas(const std::vector<RSPtr>& sets) {
  return Sum(sets, [](const api::ReplicaSet& rs) { return rs.status().available_replicas(); });
}

std::optional<int32_t> DesiredReplicasAnnotation(const api::ReplicaSet& rs) {
  auto it = rs.metadata().annotations().find(kDesiredReplicas);
  int32_t v = 0;
  if (it == rs.metadata().annotations().end() || !absl::SimpleAtoi(it->second, &v)) {
    return std::nullopt;
  }
  return v;
}

int32_t NewReplicaSetReplicas(const api::Deployment& d, const std::vector<RSPtr>& all,
                              const api::ReplicaSet& new_rs) {
  const int32_t replicas = d.spec().replicas();
  if (!IsRollingUpdate(d)) return replicas;
  const int32_t current = SpecReplicas(all);
  const int32_t most = replicas + MaxSurge(d);
  if (current >= most) return new_rs.spec().replicas();  // no room to surge
  const int32_t up = std::min(most - current, replicas - new_rs.spec().replicas());
  return new_rs.spec().replicas() + std::max(up, 0);
}

bool IsSaturated(const api::Deployment& d, const api::ReplicaSet* new_rs) {
  if (!new_rs) return false;
  const auto desired = DesiredReplicasAnnotation(*new_rs);
  return desired && *desired == d.spec().replicas() &&
         new_rs->spec().replicas() == d.spec().replicas() &&
         new_rs->status().available_replicas() == d.spec().replicas();
}

int32_t Proportion(const api::ReplicaSet& rs, const api::Deployment& d, int32_t to_add,
                   int32_t added) {
  if (rs.spec().replicas() == 0 || to_add == 0 || to_add == added) return 0;
  int32_t fraction;
  if (d.spec().replicas() == 0) {
    fraction = -rs.spec().replicas();
  } else {
    const int32_t deployment_replicas = d.spec().replicas() + MaxSurge(d);
    int32_t annotated = d.status().replicas();
    auto it = rs.metadata().annotations().find(kMaxReplicas);
    int32_t v = 0;
    if (it != rs.metadata().annotations().end() && absl::SimpleAtoi(it->second, &v)) annotated = v;
    if (annotated == 0) annotated = 1;
    const double size = std::ceil(static_cast<double>(rs.spec().replicas()) *
                                  deployment_replicas / annotated);
    fraction = static_cast<int32_t>(size) - rs.spec().replicas();
  }
  const int32_t allowed = to_add - added;
  return to_add > 0 ? std::min(fraction, allowed) : std::max(fraction, allowed);
}

bool Complete(const api::Deployment& d, const api::DeploymentStatus& s) {
  const int32_t replicas = d.spec().replicas();
  return s.updated_replicas() == replicas && s.replicas() == replicas &&
         s.available_replicas() == replicas &&
         s.observed_generation() >= d.metadata().generation();
}

bool Progressing(const api::Deployment& d, const api::DeploymentStatus& s) {
  const auto& old = d.status();
  return s.updated_replicas() > old.updated_replicas() ||
         s.replicas() - s.updated_replicas() < old.replicas() - old.updated_replicas() ||
         s.ready_replicas() > old.ready_replicas() ||
         s.available_replicas() > old.available_replicas();
}

bool HasProgressDeadline(const api::Deployment& d) {
  return d.spec().has_progress_deadline_seconds() &&
         d.spec().progress_deadline_seconds() != std::numeric_limits<int32_t>::max();
}

bool TimedOut(const api::Deployment& d, const api::DeploymentStatus& s, absl::Time now) {
  if (!HasProgressDeadline(d)) return false;
  const api::Condition* c = FindCondition(s, "Progressing");
  if (!c) return false;
  if (c->reason() == kNewRSAvailable) return false;
  if (c->reason() == kTimedOut) return true;
  auto from = api::ParseRfc3339(c->last_update_time());
  return from && *from + absl::Seconds(d.spec().progress_deadline_seconds()) < now;
}

const api::Condition* FindCondition(const api::DeploymentStatus& status, const std::string& type) {
  for (const auto& c : status.conditions()) {
    if (c.type() == type) return &c;
  }
  return nullptr;
}

void RemoveCondition(api::DeploymentStatus* status, const std::string& type) {
  auto* cs = status->mutable_conditions();
  for (int i = cs->size() - 1; i >= 0; --i) {
    if (cs->Get(i).type() == type) cs->DeleteSubrange(i, 1);
  }
}

void SetCondition(api::DeploymentStatus* status, api::Condition c) {
  const api::Condition* cur = FindCondition(*status, c.type());
  if (cur && cur->status() == c.status() && cur->reason() == c.reason()) return;
  if (cur && cur->status() == c.status()) c.set_last_transition_time(cur->last_transition_time());
  RemoveCondition(status, c.type());
  *status->add_conditions() = std::move(c);
}

api::Condition NewCondition(const std::string& type, const std::string& status,
                            const std::string& reason, const std::string& message,
                            absl::Time now) {
  api::Condition c;
  c.set_type(type);
  c.set_status(status);
  c.set_reason(reason);
  c.set_message(message);
  c.set_last_update_time(api::Rfc3339(now));
  c.set_last_transition_time(api::Rfc3339(now));
  return c;
}

}  // namespace mkube::controller::deployment
