#pragma once

#include <string>

#include "google/protobuf/message.h"
#include "proto/api/meta.pb.h"

// Reflection helpers over any kind: every kind has metadata, most have spec and status.
namespace mkube::api {

const ObjectMeta& MetaOf(const google::protobuf::Message& obj);
ObjectMeta* MutableMetaOf(google::protobuf::Message* obj);

// The serialized spec / status (empty when the kind has none), to compare or move them.
std::string SpecBytes(const google::protobuf::Message& obj);
// Copies the named part ("spec", "status") from one object to another of the same kind.
void CopyPart(const google::protobuf::Message& from, google::protobuf::Message* to,
              const char* part);
void SetTypeMeta(google::protobuf::Message* obj, const std::string& api_version,
                 const std::string& kind);

// RFC 3339 in UTC with seconds, as Kubernetes writes times.
std::string NowRfc3339();
std::string NewUid();

}  // namespace mkube::api
