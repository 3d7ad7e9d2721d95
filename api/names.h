#pragma once

// Kubernetes' rules for names, label and annotation keys and label values, and the sentences
// kube-apiserver answers with when a value breaks them. Each check returns every reason the
// value is refused (a length and a syntax may both be wrong), empty when it is valid.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace mkube::api {

// The sum of every annotation's key and value, in bytes.
inline constexpr size_t kTotalAnnotationSizeLimit = 256 << 10;

// What most objects' names are (pods, nodes, workloads): at most 253 characters, dot-separated
// lowercase alphanumeric labels with '-' inside.
std::vector<std::string> Dns1123SubdomainErrors(std::string_view value);
// What namespaces' names and containers' names are: one such label, at most 63 characters.
std::vector<std::string> Dns1123LabelErrors(std::string_view value);
// Label keys, and annotation keys once lowercased: [prefix/]name, the prefix a DNS subdomain,
// the name at most 63 alphanumerics with '-', '_' or '.' inside.
std::vector<std::string> QualifiedNameErrors(std::string_view value);
// Label values: empty, or at most 63 alphanumerics with '-', '_' or '.' inside.
std::vector<std::string> LabelValueErrors(std::string_view value);

// A generateName is checked as the start of a name: a trailing '-' is allowed (Kubernetes
// replaces its last two characters with one letter before checking).
std::string MaskTrailingDash(std::string_view prefix);

}  // namespace mkube::api
