#pragma once

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Early returns on a failed absl::Status or absl::StatusOr, as Abseil's own code writes them.

// Returns from the enclosing function when `expr` (an absl::Status) is not OK.
#define MKUBE_RETURN_IF_ERROR(expr)                       \
  do {                                                    \
    if (absl::Status _st = (expr); !_st.ok()) return _st; \
  } while (0)

#define MKUBE_CONCAT_INNER(a, b) a##b
#define MKUBE_CONCAT(a, b) MKUBE_CONCAT_INNER(a, b)

// `lhs = *expr` for an absl::StatusOr, or returns its status. `lhs` may declare:
//   MKUBE_ASSIGN_OR_RETURN(auto pod, client.Get(name));
#define MKUBE_ASSIGN_OR_RETURN(lhs, expr) \
  MKUBE_ASSIGN_OR_RETURN_IMPL(MKUBE_CONCAT(_status_or_, __LINE__), lhs, expr)
#define MKUBE_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(*tmp)
