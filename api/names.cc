#include "api/names.h"

#include <algorithm>
#include <cctype>

#include "fmt/format.h"

namespace mkube::api {
namespace {

constexpr size_t kDns1123LabelMax = 63;
constexpr size_t kDns1123SubdomainMax = 253;
constexpr size_t kQualifiedNameMax = 63;
constexpr size_t kLabelValueMax = 63;

constexpr char kLabelFormat[] = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
constexpr char kSubdomainFormat[] =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
constexpr char kQualifiedFormat[] = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
constexpr char kLabelValueFormat[] = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
constexpr char kQualifiedWhy[] =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character";

bool LowerAlnum(char c) {
  return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c));
}
bool Alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// [a-z0-9]([-a-z0-9]*[a-z0-9])?
bool IsLabel(std::string_view s) {
  return !s.empty() && LowerAlnum(s.front()) && LowerAlnum(s.back()) &&
         std::all_of(s.begin(), s.end(), [](char c) { return LowerAlnum(c) || c == '-'; });
}

// Labels joined by dots; DNS's 63 characters per label is not asked (Kubernetes does not).
bool IsSubdomain(std::string_view s) {
  for (size_t start = 0;;) {
    const size_t dot = s.find('.', start);
    if (!IsLabel(s.substr(start, dot == std::string_view::npos ? s.npos : dot - start))) {
      return false;
    }
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]
bool IsQualifiedNamePart(std::string_view s) {
  return !s.empty() && Alnum(s.front()) && Alnum(s.back()) &&
         std::all_of(s.begin(), s.end(),
                     [](char c) { return Alnum(c) || c == '-' || c == '_' || c == '.'; });
}

std::string TooLong(size_t max) { return fmt::format("must be no more than {} characters", max); }

// "WHY (e.g. 'a',  or 'b', regex used for validation is 'FORMAT')", as apimachinery words a
// value that does not match its pattern.
std::string Mismatch(std::string_view why, std::string_view format,
                     const std::vector<std::string_view>& examples) {
  std::string out(why);
  out += " (e.g. ";
  for (size_t i = 0; i < examples.size(); ++i) {
    if (i > 0) out += " or ";
    out += fmt::format("'{}', ", examples[i]);
  }
  return out + fmt::format("regex used for validation is '{}')", format);
}

}  // namespace

std::vector<std::string> Dns1123SubdomainErrors(std::string_view value) {
  std::vector<std::string> out;
  if (value.size() > kDns1123SubdomainMax) out.push_back(TooLong(kDns1123SubdomainMax));
  if (!IsSubdomain(value)) {
    out.push_back(Mismatch(
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
        "or '.', and must start and end with an alphanumeric character",
        kSubdomainFormat, {"example.com"}));
  }
  return out;
}

std::vector<std::string> Dns1123LabelErrors(std::string_view value) {
  std::vector<std::string> out;
  if (value.size() > kDns1123LabelMax) out.push_back(TooLong(kDns1123LabelMax));
  if (!IsLabel(value)) {
    if (IsSubdomain(value)) {
      out.push_back("must not contain dots");  // the length was told above
    } else {
      out.push_back(Mismatch(
          "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
          "'-', and must start and end with an alphanumeric character",
          kLabelFormat, {"my-name", "123-abc"}));
    }
  }
  return out;
}

std::vector<std::string> QualifiedNameErrors(std::string_view value) {
  std::vector<std::string> out;
  std::string_view name = value;
  if (const size_t slash = value.find('/'); slash != std::string_view::npos) {
    if (value.find('/', slash + 1) != std::string_view::npos) {
      return {"a qualified name " +
              Mismatch(kQualifiedWhy, kQualifiedFormat, {"MyName", "my.name", "123-abc"}) +
              " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"};
    }
    const std::string_view prefix = value.substr(0, slash);
    name = value.substr(slash + 1);
    if (prefix.empty()) {
      out.push_back("prefix part must be non-empty");
    } else {
      for (const auto& why : Dns1123SubdomainErrors(prefix)) out.push_back("prefix part " + why);
    }
  }
  if (name.empty()) {
    out.push_back("name part must be non-empty");
  } else if (name.size() > kQualifiedNameMax) {
    out.push_back("name part " + TooLong(kQualifiedNameMax));
  }
  if (!IsQualifiedNamePart(name)) {
    out.push_back("name part " +
                  Mismatch(kQualifiedWhy, kQualifiedFormat, {"MyName", "my.name", "123-abc"}));
  }
  return out;
}

std::vector<std::string> LabelValueErrors(std::string_view value) {
  std::vector<std::string> out;
  if (value.size() > kLabelValueMax) out.push_back(TooLong(kLabelValueMax));
  if (!value.empty() && !IsQualifiedNamePart(value)) {
    out.push_back(Mismatch(
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
        "or '.', and must start and end with an alphanumeric character",
        kLabelValueFormat, {"MyValue", "my_value", "12345"}));
  }
  return out;
}

std::string MaskTrailingDash(std::string_view prefix) {
  if (prefix.size() > 1 && prefix.back() == '-') {
    return std::string(prefix.substr(0, prefix.size() - 2)) + "a";
  }
  return std::string(prefix);
}

}  // namespace mkube::api
