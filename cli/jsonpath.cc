#include "cli/jsonpath.h"

#include <optional>
#include <variant>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/status.h"
#include "fmt/format.h"

namespace mkube::cli {

using json = nlohmann::ordered_json;

namespace {

struct Path;

// [?(@.a == "x")]: the left path, the operator ("" tests that the path exists), and the
// right side, a literal or another path.
struct Filter {
  std::shared_ptr<Path> left, right;
  std::string op;
  json literal;
};

struct Step {
  enum Kind { kField, kRecursive, kWildcard, kUnion, kSlice, kFilter } kind = kField;
  std::string name;                                      // kField, kRecursive
  std::vector<std::variant<int64_t, std::string>> keys;  // kUnion
  std::optional<int64_t> start, end;                     // kSlice
  int64_t step = 1;
  Filter filter;
};

struct Path {
  bool from_root = false;  // "$": the whole object, even inside a range
  std::vector<Step> steps;
};

absl::Status Error(const std::string& text, const std::string& why) {
  return absl::InvalidArgumentError(fmt::format("error parsing jsonpath {}, {}", text, why));
}

// The end of a bracket or parenthesis opened at `i`, skipping quoted text; npos if unclosed.
size_t Closing(const std::string& s, size_t i, char open, char close) {
  int depth = 0;
  char quote = 0;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (quote) {
      if (c == '\\') ++i;
      else if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == open) {
      ++depth;
    } else if (c == close && --depth == 0) {
      return i;
    }
  }
  return std::string::npos;
}

std::optional<std::string> Unquote(const std::string& s) {
  if (s.size() < 2 || (s[0] != '"' && s[0] != '\'') || s.back() != s[0]) return std::nullopt;
  std::string out;
  for (size_t i = 1; i + 1 < s.size(); ++i) {
    if (s[i] == '\\' && i + 2 < s.size()) {
      const char e = s[++i];
      out.push_back(e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e);
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

class PathParser {
 public:
  PathParser(const std::string& s, const std::string& whole) : s_(s), whole_(whole) {}

  absl::StatusOr<Path> Parse() {
    Path p;
    SkipSpaces();
    if (i_ < s_.size() && (s_[i_] == '$' || s_[i_] == '@')) {
      p.from_root = s_[i_] == '$';
      ++i_;
    }
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == '.') {
        const bool recursive = i_ + 1 < s_.size() && s_[i_ + 1] == '.';
        i_ += recursive ? 2 : 1;
        if (i_ >= s_.size()) {
          if (recursive) return Error(whole_, "a recursive descent names no field");
          break;  // "." alone: the object itself
        }
        if (s_[i_] == '[' && !recursive) continue;  // .[0] is [0]
        Step st;
        if (s_[i_] == '*') {
          ++i_;
          st.kind = Step::kWildcard;
        } else {
          st.kind = recursive ? Step::kRecursive : Step::kField;
          st.name = Name();
          if (st.name.empty()) {
            return Error(whole_, fmt::format("unrecognized character in action: {}", s_[i_]));
          }
        }
        p.steps.push_back(std::move(st));
      } else if (c == '[') {
        const size_t close = Closing(s_, i_, '[', ']');
        if (close == std::string::npos) return Error(whole_, "unterminated array");
        MKUBE_ASSIGN_OR_RETURN(
            auto st,
            Bracket(std::string(absl::StripAsciiWhitespace(s_.substr(i_ + 1, close - i_ - 1)))));
        p.steps.push_back(std::move(st));
        i_ = close + 1;
      } else if (c == ' ') {
        SkipSpaces();
        if (i_ < s_.size()) return Error(whole_, "unexpected text after a path");
      } else {
        return Error(whole_, fmt::format("unrecognized character in action: {}", c));
      }
    }
    return p;
  }

 private:
  void SkipSpaces() {
    while (i_ < s_.size() && s_[i_] == ' ') ++i_;
  }

  // A field name: up to the next '.', '[' or space; "\." is a dot inside the name.
  std::string Name() {
    std::string out;
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == '\\' && i_ + 1 < s_.size()) {
        out.push_back(s_[i_ + 1]);
        i_ += 2;
        continue;
      }
      if (c == '.' || c == '[' || c == ' ') break;
      out.push_back(c);
      ++i_;
    }
    return out;
  }

  absl::StatusOr<Step> Bracket(const std::string& in) {
    Step st;
    if (in == "*") {
      st.kind = Step::kWildcard;
      return st;
    }
    if (in.size() >= 3 && in.substr(0, 2) == "?(" && in.back() == ')') {
      st.kind = Step::kFilter;
      MKUBE_ASSIGN_OR_RETURN(auto f, ParseFilter(std::string(in.substr(2, in.size() - 3))));
      st.filter = std::move(f);
      return st;
    }
    if (!in.empty() && in[0] != '\'' && in[0] != '"' && in.find(':') != std::string::npos) {
      st.kind = Step::kSlice;
      std::vector<std::string> parts = absl::StrSplit(in, ':');
      if (parts.size() > 3) return Error(whole_, fmt::format("invalid array slice [{}]", in));
      for (size_t k = 0; k < parts.size(); ++k) {
        const std::string part(absl::StripAsciiWhitespace(parts[k]));
        if (part.empty()) continue;
        int64_t n = 0;
        if (!absl::SimpleAtoi(part, &n)) {
          return Error(whole_, fmt::format("invalid array index {}", part));
        }
        if (k == 0) st.start = n;
        if (k == 1) st.end = n;
        if (k == 2) st.step = n;
      }
      if (st.step <= 0) return Error(whole_, "a slice's step must be positive");
      return st;
    }
    st.kind = Step::kUnion;
    for (absl::string_view raw : absl::StrSplit(in, ',')) {
      const std::string key(absl::StripAsciiWhitespace(raw));
      int64_t n = 0;
      if (auto name = Unquote(key)) {
        st.keys.emplace_back(*name);
      } else if (absl::SimpleAtoi(key, &n)) {
        st.keys.emplace_back(n);
      } else {
        return Error(whole_, fmt::format("invalid array index {}", key));
      }
    }
    return st;
  }

  absl::StatusOr<Filter> ParseFilter(const std::string& text) {
    Filter f;
    size_t at = std::string::npos;
    char quote = 0;
    for (size_t k = 0; k < text.size() && at == std::string::npos; ++k) {
      const char c = text[k];
      if (quote) {
        if (c == quote) quote = 0;
        continue;
      }
      if (c == '"' || c == '\'') quote = c;
      for (const char* op : {"==", "!=", "<=", ">=", "<", ">"}) {
        if (text.compare(k, std::strlen(op), op) == 0) {
          at = k;
          f.op = op;
          break;
        }
      }
    }
    auto side = [&](const std::string& t) -> absl::StatusOr<std::shared_ptr<Path>> {
      PathParser sub(t, whole_);
      MKUBE_ASSIGN_OR_RETURN(auto p, sub.Parse());
      return std::make_shared<Path>(std::move(p));
    };
    const std::string left(absl::StripAsciiWhitespace(text.substr(0, at)));
    MKUBE_ASSIGN_OR_RETURN(auto l, side(left));
    f.left = l;
    if (at == std::string::npos) return f;
    const std::string right(absl::StripAsciiWhitespace(text.substr(at + f.op.size())));
    double number = 0;
    if (auto s = Unquote(right)) {
      f.literal = *s;
    } else if (absl::SimpleAtod(right, &number)) {
      f.literal = number;
    } else if (right == "true" || right == "false") {
      f.literal = right == "true";
    } else if (!right.empty() && (right[0] == '@' || right[0] == '$')) {
      MKUBE_ASSIGN_OR_RETURN(auto r, side(right));
      f.right = r;
    } else {
      return Error(whole_, fmt::format("unrecognized filter value {}", right));
    }
    return f;
  }

  const std::string& s_;
  const std::string& whole_;
  size_t i_ = 0;
};

using Values = std::vector<const json*>;

Values Eval(const Path& p, const json& root, const json& current);

void Descend(const json& v, const std::string& name, Values* out) {
  if (v.is_object()) {
    if (auto it = v.find(name); it != v.end()) out->push_back(&*it);
    for (const auto& [k, child] : v.items()) Descend(child, name, out);
  } else if (v.is_array()) {
    for (const auto& child : v) Descend(child, name, out);
  }
}

bool Compare(const json& a, const std::string& op, const json& b) {
  if (a.is_number() && b.is_number()) {
    const double x = a.get<double>(), y = b.get<double>();
    return op == "==" ? x == y : op == "!=" ? x != y : op == "<" ? x < y : op == "<=" ? x <= y
                                                   : op == ">" ? x > y : x >= y;
  }
  const std::string x = JsonPathText(a), y = JsonPathText(b);
  return op == "==" ? x == y : op == "!=" ? x != y : op == "<" ? x < y : op == "<=" ? x <= y
                                                 : op == ">" ? x > y : x >= y;
}

bool Matches(const Filter& f, const json& root, const json& e) {
  Values left = Eval(*f.left, root, e);
  if (f.op.empty()) return !left.empty();
  if (left.empty()) return false;
  if (f.right) {
    Values right = Eval(*f.right, root, e);
    return !right.empty() && Compare(*left[0], f.op, *right[0]);
  }
  return Compare(*left[0], f.op, f.literal);
}

void Apply(const Step& st, const json& root, const json& v, Values* out) {
  switch (st.kind) {
    case Step::kField:
      if (v.is_object()) {
        if (auto it = v.find(st.name); it != v.end()) out->push_back(&*it);
      }
      return;
    case Step::kRecursive:
      Descend(v, st.name, out);
      return;
    case Step::kWildcard:
      if (v.is_object() || v.is_array()) {
        for (const auto& child : v) out->push_back(&child);
      }
      return;
    case Step::kUnion:
      for (const auto& key : st.keys) {
        if (const auto* n = std::get_if<int64_t>(&key); n && v.is_array()) {
          const int64_t size = static_cast<int64_t>(v.size());
          const int64_t at = *n < 0 ? size + *n : *n;
          if (at >= 0 && at < size) out->push_back(&v[static_cast<size_t>(at)]);
        } else if (const auto* name = std::get_if<std::string>(&key); name && v.is_object()) {
          if (auto it = v.find(*name); it != v.end()) out->push_back(&*it);
        }
      }
      return;
    case Step::kSlice: {
      if (!v.is_array()) return;
      const int64_t size = static_cast<int64_t>(v.size());
      auto clamp = [size](int64_t n) { return std::clamp(n < 0 ? size + n : n, int64_t{0}, size); };
      const int64_t from = clamp(st.start.value_or(0)), to = clamp(st.end.value_or(size));
      for (int64_t k = from; k < to; k += st.step) out->push_back(&v[static_cast<size_t>(k)]);
      return;
    }
    case Step::kFilter:
      if (v.is_object() || v.is_array()) {
        for (const auto& e : v) {
          if (Matches(st.filter, root, e)) out->push_back(&e);
        }
      }
      return;
  }
}

Values Eval(const Path& p, const json& root, const json& current) {
  Values values{p.from_root ? &root : &current};
  for (const auto& st : p.steps) {
    Values next;
    for (const json* v : values) Apply(st, root, *v, &next);
    values = std::move(next);
  }
  return values;
}

}  // namespace

struct JsonPath::Node {
  enum Kind { kText, kPath, kRange } kind = kText;
  std::string text;
  Path path;
  Nodes children;  // kRange
};

JsonPath::JsonPath() = default;
JsonPath::JsonPath(JsonPath&&) noexcept = default;
JsonPath& JsonPath::operator=(JsonPath&&) noexcept = default;
JsonPath::~JsonPath() = default;

absl::StatusOr<JsonPath> JsonPath::Parse(const std::string& text) {
  JsonPath out;
  std::vector<Nodes*> open{&out.nodes_};
  auto add_text = [&](std::string t) {
    if (t.empty()) return;
    auto n = std::make_unique<Node>();
    n->text = std::move(t);
    open.back()->push_back(std::move(n));
  };
  size_t i = 0;
  while (i < text.size()) {
    const size_t brace = text.find('{', i);
    add_text(text.substr(i, brace == std::string::npos ? std::string::npos : brace - i));
    if (brace == std::string::npos) break;
    const size_t close = Closing(text, brace, '{', '}');
    if (close == std::string::npos) return Error(text, "unclosed action");
    const std::string action(absl::StripAsciiWhitespace(text.substr(brace + 1, close - brace - 1)));
    i = close + 1;
    if (action == "end") {
      if (open.size() == 1) return Error(text, "not in range, nothing to end");
      open.pop_back();
      continue;
    }
    if (auto literal = Unquote(action)) {
      add_text(*literal);
      continue;
    }
    const bool range = action.rfind("range ", 0) == 0;
    const std::string expr = range ? std::string(absl::StripAsciiWhitespace(action.substr(6))) : action;
    PathParser parser(expr, text);
    MKUBE_ASSIGN_OR_RETURN(auto path, parser.Parse());
    auto n = std::make_unique<Node>();
    n->kind = range ? Node::kRange : Node::kPath;
    n->path = std::move(path);
    Nodes* children = &n->children;
    open.back()->push_back(std::move(n));
    if (range) open.push_back(children);
  }
  if (open.size() > 1) return Error(text, "unclosed range");
  return out;
}

absl::StatusOr<JsonPath> JsonPath::ParseRelaxed(const std::string& text) {
  std::string t(absl::StripAsciiWhitespace(text));
  if (!t.empty() && t.front() == '{' && t.back() == '}') return Parse(t);
  if (!t.empty() && t.front() != '.' && t.front() != '$' && t.front() != '[') t = "." + t;
  return Parse("{" + t + "}");
}

namespace {

void Run(const JsonPath::Nodes& nodes, const json& root, const json& current, std::string* out,
         std::vector<const json*>* values) {
  for (const auto& n : nodes) {
    if (n->kind == JsonPath::Node::kText) {
      if (out) out->append(n->text);
      continue;
    }
    Values found = Eval(n->path, root, current);
    if (n->kind == JsonPath::Node::kPath) {
      if (values) values->insert(values->end(), found.begin(), found.end());
      if (!out) continue;
      std::vector<std::string> texts;
      for (const json* v : found) texts.push_back(JsonPathText(*v));
      out->append(absl::StrJoin(texts, " "));
      continue;
    }
    // range: over each result, or over the elements of a single array result.
    if (found.size() == 1 && found[0]->is_array()) {
      Values items;
      for (const auto& e : *found[0]) items.push_back(&e);
      found = std::move(items);
    }
    for (const json* item : found) Run(n->children, root, *item, out, values);
  }
}

}  // namespace

std::string JsonPath::Execute(const json& root) const {
  std::string out;
  Run(nodes_, root, root, &out, nullptr);
  return out;
}

std::vector<const json*> JsonPath::Values(const json& root) const {
  std::vector<const json*> values;
  Run(nodes_, root, root, nullptr, &values);
  return values;
}

std::string JsonPathText(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (d == static_cast<double>(static_cast<int64_t>(d))) return std::to_string(static_cast<int64_t>(d));
  }
  return v.dump();
}

}  // namespace mkube::cli
