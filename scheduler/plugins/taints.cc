#include "scheduler/plugins/taints.h"

#include <algorithm>

namespace mkube::scheduler::plugins {

bool Tolerates(const api::Toleration& t, const api::Taint& taint) {
  if (!t.effect().empty() && t.effect() != taint.effect()) return false;
  if (!t.key().empty() && t.key() != taint.key()) return false;
  if (t.operator_() == "Exists") return true;
  if (t.operator_().empty() || t.operator_() == "Equal") return t.value() == taint.value();
  return false;
}

bool Tolerated(const google::protobuf::RepeatedPtrField<api::Toleration>& tolerations,
               const api::Taint& taint) {
  return std::any_of(tolerations.begin(), tolerations.end(),
                     [&](const api::Toleration& t) { return Tolerates(t, taint); });
}

}  // namespace mkube::scheduler::plugins
