#include "api/labels.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "absl/strings/str_join.h"
#include "base/status.h"
#include "fmt/format.h"

namespace mkube::api {
namespace {

using Op = Requirement::Op;

bool IsAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// name: at most 63 characters, alphanumerics with '-', '_' or '.' inside.
bool QualifiedNamePart(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  if (!IsAlnum(s.front()) || !IsAlnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return IsAlnum(c) || c == '-' || c == '_' || c == '.'; });
}

bool DnsSubdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (start <= s.size()) {
    size_t dot = s.find('.', start);
    std::string_view label = s.substr(start, dot == std::string_view::npos ? s.npos : dot - start);
    if (label.empty() || label.size() > 63) return false;
    if (!std::islower(static_cast<unsigned char>(label.front())) && !std::isdigit(static_cast<unsigned char>(label.front()))) return false;
    if (!std::islower(static_cast<unsigned char>(label.back())) && !std::isdigit(static_cast<unsigned char>(label.back()))) return false;
    for (char c : label) {
      if (!std::islower(static_cast<unsigned char>(c)) && !std::isdigit(static_cast<unsigned char>(c)) && c != '-') return false;
    }
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return true;
}

bool ParseInt64(std::string_view s, int64_t* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

absl::Status CheckRequirement(const Requirement& r) {
  MKUBE_RETURN_IF_ERROR(ValidateLabelKey(r.key));
  switch (r.op) {
    case Op::kIn:
    case Op::kNotIn:
      if (r.values.empty()) {
        return absl::InvalidArgumentError(
            fmt::format("{}: for 'in', 'notin' operators, values set can't be empty", r.key));
      }
      break;
    case Op::kExists:
    case Op::kDoesNotExist:
      if (!r.values.empty()) {
        return absl::InvalidArgumentError(fmt::format(
            "{}: values set must be empty for exists and does not exist", r.key));
      }
      return absl::OkStatus();
    case Op::kGt:
    case Op::kLt: {
      int64_t v;
      if (r.values.size() != 1 || !ParseInt64(r.values[0], &v)) {
        return absl::InvalidArgumentError(
            fmt::format("{}: for 'Gt', 'Lt' operators, exactly one integer value is required",
                        r.key));
      }
      return absl::OkStatus();
    }
    default:
      if (r.values.size() != 1) {
        return absl::InvalidArgumentError(
            fmt::format("{}: exact-match compatibility requires one single value", r.key));
      }
  }
  for (const auto& v : r.values) {
    MKUBE_RETURN_IF_ERROR(ValidateLabelValue(v));
  }
  return absl::OkStatus();
}

absl::StatusOr<Op> ExpressionOp(std::string_view op, bool node_selector) {
  if (op == "In") return Op::kIn;
  if (op == "NotIn") return Op::kNotIn;
  if (op == "Exists") return Op::kExists;
  if (op == "DoesNotExist") return Op::kDoesNotExist;
  if (node_selector && op == "Gt") return Op::kGt;
  if (node_selector && op == "Lt") return Op::kLt;
  return absl::InvalidArgumentError(fmt::format("\"{}\" is not a valid selector operator", op));
}

}  // namespace

absl::Status ValidateLabelKey(std::string_view key) {
  std::string_view name = key;
  if (auto slash = key.find('/'); slash != std::string_view::npos) {
    std::string_view prefix = key.substr(0, slash);
    name = key.substr(slash + 1);
    if (!DnsSubdomain(prefix)) {
      return absl::InvalidArgumentError(fmt::format(
          "\"{}\": prefix part must be a lowercase DNS-1123 subdomain", key));
    }
  }
  if (!QualifiedNamePart(name)) {
    return absl::InvalidArgumentError(fmt::format(
        "\"{}\": name part must consist of alphanumeric characters, '-', '_' or '.', and must "
        "start and end with an alphanumeric character (at most 63 characters)",
        key));
  }
  return absl::OkStatus();
}

absl::Status ValidateLabelValue(std::string_view value) {
  if (value.empty() || QualifiedNamePart(value)) return absl::OkStatus();
  return absl::InvalidArgumentError(fmt::format(
      "\"{}\": a valid label must be an empty string or consist of alphanumeric characters, "
      "'-', '_' or '.', and must start and end with an alphanumeric character (at most 63 "
      "characters)",
      value));
}

bool Requirement::Matches(const google::protobuf::Map<std::string, std::string>& labels) const {
  auto it = labels.find(key);
  const bool has = it != labels.end();
  switch (op) {
    case Op::kEquals:
    case Op::kIn:
      return has && std::find(values.begin(), values.end(), it->second) != values.end();
    case Op::kNotEquals:
    case Op::kNotIn:
      return !has || std::find(values.begin(), values.end(), it->second) == values.end();
    case Op::kExists: return has;
    case Op::kDoesNotExist: return !has;
    case Op::kGt:
    case Op::kLt: {
      int64_t have, want;
      if (!has || values.size() != 1 || !ParseInt64(it->second, &have) ||
          !ParseInt64(values[0], &want)) {
        return false;
      }
      return op == Op::kGt ? have > want : have < want;
    }
  }
  return false;
}

std::string Requirement::String() const {
  switch (op) {
    case Op::kEquals: return fmt::format("{}={}", key, values.empty() ? "" : values[0]);
    case Op::kNotEquals: return fmt::format("{}!={}", key, values.empty() ? "" : values[0]);
    case Op::kIn: return fmt::format("{} in ({})", key, absl::StrJoin(values, ","));
    case Op::kNotIn: return fmt::format("{} notin ({})", key, absl::StrJoin(values, ","));
    case Op::kExists: return key;
    case Op::kDoesNotExist: return "!" + key;
    case Op::kGt: return fmt::format("{}>{}", key, values.empty() ? "" : values[0]);
    case Op::kLt: return fmt::format("{}<{}", key, values.empty() ? "" : values[0]);
  }
  return key;
}

absl::StatusOr<Selector> Selector::Parse(std::string_view text) {
  Selector sel;
  text = Trim(text);
  size_t i = 0;
  while (i < text.size()) {
    // One requirement runs to the next comma outside parentheses.
    size_t end = i;
    int depth = 0;
    for (; end < text.size(); ++end) {
      if (text[end] == '(') ++depth;
      if (text[end] == ')') --depth;
      if (text[end] == ',' && depth == 0) break;
    }
    std::string_view part = Trim(text.substr(i, end - i));
    i = end + 1;
    if (part.empty()) return absl::InvalidArgumentError("found ',', expected: identifier");
    Requirement r;
    if (part[0] == '!') {
      r.key = std::string(Trim(part.substr(1)));
      r.op = Op::kDoesNotExist;
    } else if (auto p = part.find("!="); p != std::string_view::npos) {
      r.key = std::string(Trim(part.substr(0, p)));
      r.op = Op::kNotEquals;
      r.values.emplace_back(Trim(part.substr(p + 2)));
    } else if (auto p2 = part.find("=="); p2 != std::string_view::npos) {
      r.key = std::string(Trim(part.substr(0, p2)));
      r.op = Op::kEquals;
      r.values.emplace_back(Trim(part.substr(p2 + 2)));
    } else if (auto p3 = part.find('='); p3 != std::string_view::npos) {
      r.key = std::string(Trim(part.substr(0, p3)));
      r.op = Op::kEquals;
      r.values.emplace_back(Trim(part.substr(p3 + 1)));
    } else if (auto open = part.find('('); open != std::string_view::npos) {
      std::string_view head = Trim(part.substr(0, open));
      if (part.back() != ')') {
        return absl::InvalidArgumentError(fmt::format("unable to parse requirement: \"{}\"", part));
      }
      auto space = head.rfind(' ');
      if (space == std::string_view::npos) {
        return absl::InvalidArgumentError(fmt::format("unable to parse requirement: \"{}\"", part));
      }
      std::string_view word = head.substr(space + 1);
      r.key = std::string(Trim(head.substr(0, space)));
      if (word == "in") {
        r.op = Op::kIn;
      } else if (word == "notin") {
        r.op = Op::kNotIn;
      } else {
        return absl::InvalidArgumentError(
            fmt::format("unable to parse requirement: unknown operator \"{}\"", word));
      }
      std::string_view inside = part.substr(open + 1, part.size() - open - 2);
      size_t s = 0;
      while (s <= inside.size()) {
        size_t comma = inside.find(',', s);
        std::string_view v = Trim(inside.substr(s, comma == inside.npos ? inside.npos : comma - s));
        if (!v.empty()) r.values.emplace_back(v);
        if (comma == inside.npos) break;
        s = comma + 1;
      }
    } else {
      r.key = std::string(part);
      r.op = Op::kExists;
    }
    MKUBE_RETURN_IF_ERROR(CheckRequirement(r));
    sel.requirements_.push_back(std::move(r));
  }
  return sel;
}

absl::StatusOr<Selector> Selector::FromLabelSelector(const LabelSelector& selector) {
  Selector sel;
  std::map<std::string, std::string> sorted(selector.match_labels().begin(),
                                            selector.match_labels().end());
  for (const auto& [k, v] : sorted) {
    Requirement r{k, Op::kEquals, {v}};
    MKUBE_RETURN_IF_ERROR(CheckRequirement(r));
    sel.requirements_.push_back(std::move(r));
  }
  for (const auto& e : selector.match_expressions()) {
    MKUBE_ASSIGN_OR_RETURN(auto op, ExpressionOp(e.operator_(), false));
    Requirement r{e.key(), op, {e.values().begin(), e.values().end()}};
    MKUBE_RETURN_IF_ERROR(CheckRequirement(r));
    sel.requirements_.push_back(std::move(r));
  }
  return sel;
}

absl::StatusOr<Selector> Selector::FromNodeSelectorTerm(const NodeSelectorTerm& term) {
  Selector sel;
  for (const auto& e : term.match_expressions()) {
    MKUBE_ASSIGN_OR_RETURN(auto op, ExpressionOp(e.operator_(), true));
    Requirement r{e.key(), op, {e.values().begin(), e.values().end()}};
    MKUBE_RETURN_IF_ERROR(CheckRequirement(r));
    sel.requirements_.push_back(std::move(r));
  }
  return sel;
}

Selector Selector::FromMap(const google::protobuf::Map<std::string, std::string>& labels) {
  Selector sel;
  std::map<std::string, std::string> sorted(labels.begin(), labels.end());
  for (const auto& [k, v] : sorted) sel.requirements_.push_back({k, Op::kEquals, {v}});
  return sel;
}

bool Selector::Matches(const google::protobuf::Map<std::string, std::string>& labels) const {
  return std::all_of(requirements_.begin(), requirements_.end(),
                     [&](const Requirement& r) { return r.Matches(labels); });
}

std::string Selector::String() const {
  std::vector<std::string> parts;
  for (const auto& r : requirements_) parts.push_back(r.String());
  return absl::StrJoin(parts, ",");
}

}  // namespace mkube::api
