#include "api/taints.h"

#include <algorithm>

namespace mkube::api {

bool Tolerates(const Toleration& t, const Taint& taint) {
  if (!t.effect().empty() && t.effect() != taint.effect()) return false;
  if (!t.key().empty() && t.key() != taint.key()) return false;
  if (t.operator_() == "Exists") return true;
  if (t.operator_().empty() || t.operator_() == "Equal") return t.value() == taint.value();
  return false;
}

bool Tolerated(const google::protobuf::RepeatedPtrField<Toleration>& tolerations,
               const Taint& taint) {
  return std::any_of(tolerations.begin(), tolerations.end(),
                     [&](const Toleration& t) { return Tolerates(t, taint); });
}

}  // namespace mkube::api
