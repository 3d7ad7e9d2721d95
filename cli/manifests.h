#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "api/codec.h"
#include "cli/session.h"

namespace mkube::cli {

// An object read from a manifest, with the file it came from.
struct Manifest {
  std::string source;
  api::Object object;
};

// Every object in the files, folders (their .yaml, .yml and .json files) or stdin ("-").
absl::StatusOr<std::vector<Manifest>> ReadManifests(const std::vector<std::string>& files);

// Runs `one` on every object of the files; a failure is printed and the others still run
// (Reported() when any failed).
absl::Status ForEachManifest(const std::vector<std::string>& files,
                             const std::function<absl::Status(Manifest&)>& one);

// The namespace an object goes to: its own, else -n / the kubeconfig's (set on the object);
// a conflict is an error. Empty for kinds without namespaces.
absl::StatusOr<std::string> NamespaceFor(Session& s, google::protobuf::Message* obj,
                                         const api::KindInfo& kind);

}  // namespace mkube::cli
