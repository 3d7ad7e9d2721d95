#pragma once

#include <optional>
#include <string>

#include "absl/time/time.h"
#include "google/protobuf/map.h"
#include "google/protobuf/message.h"
#include "proto/api/meta.pb.h"

// Reflection helpers over any kind: every kind has metadata, most have spec and status.
namespace mkube::api {

const ObjectMeta& MetaOf(const google::protobuf::Message& obj);
ObjectMeta* MutableMetaOf(google::protobuf::Message* obj);

// Field-wise equality, maps compared as maps. Never compare serializations instead: the
// order of a map's entries in a serialization is unspecified, so equal messages may differ.
bool Equal(const google::protobuf::Message& a, const google::protobuf::Message& b);
// Whether two string maps (labels, annotations, resource lists) hold the same entries.
bool SameMap(const google::protobuf::Map<std::string, std::string>& a,
             const google::protobuf::Map<std::string, std::string>& b);
// Whether two objects of one kind have equal specs (true for kinds without a spec): what
// decides whether an update bumps metadata.generation.
bool SameSpec(const google::protobuf::Message& a, const google::protobuf::Message& b);
// Copies the named part ("spec", "status") from one object to another of the same kind.
void CopyPart(const google::protobuf::Message& from, google::protobuf::Message* to,
              const char* part);
void SetTypeMeta(google::protobuf::Message* obj, const std::string& api_version,
                 const std::string& kind);

// RFC 3339 in UTC with seconds, as Kubernetes writes times.
std::string Rfc3339(absl::Time t);
std::string NowRfc3339();
// A timestamp as the API writes it ("2026-11-29T19:10:10Z"); nullopt when empty or malformed.
std::optional<absl::Time> ParseRfc3339(const std::string& rfc3339);
std::string NewUid();

}  // namespace mkube::api
