#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "api/kinds.h"
#include "client/client.h"
#include "google/protobuf/message.h"

namespace mkube::cli {

using MessagePtr = std::shared_ptr<google::protobuf::Message>;

// "pod", "deployment.apps": how kubectl names a kind in its messages.
std::string KindName(const api::KindInfo& kind);

// The one-line message kubectl prints for a failed call ("Error from server (NotFound): ...").
std::string ErrorLine(const absl::Status& st, const std::string& server);

// Typed reads and writes of any kind over the raw client.
class Resources {
 public:
  explicit Resources(client::GrpcClient* client) : client_(client) {}

  absl::StatusOr<MessagePtr> Get(const api::KindInfo& kind, const std::string& ns,
                                 const std::string& name);
  struct ListResult {
    std::vector<MessagePtr> items;
    std::string resource_version;
  };
  absl::StatusOr<ListResult> List(const api::KindInfo& kind, const std::string& ns,
                                  const std::string& labels, const std::string& fields);
  absl::StatusOr<MessagePtr> Create(const api::KindInfo& kind, const std::string& ns,
                                    const google::protobuf::Message& obj);
  // The whole object replaced (conditional on its resourceVersion when it carries one).
  absl::StatusOr<MessagePtr> Update(const api::KindInfo& kind, const std::string& ns,
                                    const google::protobuf::Message& obj);
  absl::StatusOr<MessagePtr> Patch(const api::KindInfo& kind, const std::string& ns,
                                   const std::string& name, const std::string& merge_patch,
                                   const std::string& subresource = "");
  // The field manager mkubectl's writes are recorded under in managedFields.
  static constexpr char kFieldManager[] = "mkubectl";
  // A server-side apply of `obj` (its configuration) by `manager`; creates it when missing.
  absl::StatusOr<MessagePtr> ServerSideApply(const api::KindInfo& kind, const std::string& ns,
                                             const google::protobuf::Message& obj,
                                             const std::string& manager, bool force);
  // `propagation`: "Background", "Foreground", "Orphan", or empty for the kind's default.
  absl::StatusOr<MessagePtr> Delete(const api::KindInfo& kind, const std::string& ns,
                                    const std::string& name, std::optional<int64_t> grace,
                                    const std::string& propagation = "");
  // An object the server sent: the kind's message, or a Scale for the scale subresource.
  absl::StatusOr<MessagePtr> Decode(const api::KindInfo& kind, const std::string& bytes,
                                    const std::string& subresource = "");
  client::GrpcClient* client() { return client_; }

 private:
  client::GrpcClient* client_;
};

}  // namespace mkube::cli
