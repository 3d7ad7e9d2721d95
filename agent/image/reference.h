#pragma once

#include <string>

#include "absl/status/statusor.h"

// Image references as Kubernetes reads them (the distribution project's grammar, with Docker
// Hub's defaults): [HOST[:PORT]/]PATH[:TAG][@ALGORITHM:DIGEST].
namespace mkube::agent::image {

struct Reference {
  std::string registry;    // "docker.io", "127.0.0.1:5000"
  std::string repository;  // "library/alpine", "team/app"
  std::string tag;         // empty when the reference has a digest and no tag
  std::string digest;      // "sha256:<64 hex>", or empty

  // The whole reference: "docker.io/library/alpine:latest", "127.0.0.1:5000/app@sha256:...".
  std::string String() const;
  // As people write it: Docker Hub's host and "library/" left out ("alpine:latest").
  std::string Familiar() const;
  // What a pull asks the registry's manifests for: the digest when there is one, else the tag.
  const std::string& Selector() const { return digest.empty() ? tag : digest; }
};

// Parses `text`. A reference without a host is Docker Hub's ("docker.io"), one-part paths
// there are "library/"'s, and without tag or digest the tag is "latest". The error names what
// is wrong with the reference.
absl::StatusOr<Reference> ParseReference(const std::string& text);

}  // namespace mkube::agent::image
