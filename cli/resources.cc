#include "cli/resources.h"

#include "api/codec.h"
#include "api/object.h"
#include "base/status.h"
#include "fmt/format.h"
#include "proto/api/apps.pb.h"

namespace mkube::cli {

std::string KindName(const api::KindInfo& kind) {
  std::string lower = kind.kind;
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return kind.group.empty() ? lower : lower + "." + kind.group;
}

namespace {

// gRPC refuses a request larger than the apiserver's --max-request-bytes before the apiserver
// sees it: "Received message larger than max (52428850 vs. 3145728)". Kubernetes' apiserver
// words the same refusal "Request entity too large: limit is 3145728".
std::string EntityTooLarge(std::string msg) {
  for (const char* refusal : {"Received message larger than max (", "Sent message larger than max ("}) {
    const size_t at = msg.find(refusal);
    if (at == std::string::npos) continue;
    const size_t vs = msg.find(" vs. ", at);
    const size_t close = msg.find(')', at);
    if (vs == std::string::npos || close == std::string::npos || vs > close) continue;
    const std::string limit = msg.substr(vs + 5, close - vs - 5);
    return msg.replace(at, close + 1 - at, "Request entity too large: limit is " + limit);
  }
  return msg;
}

}  // namespace

std::string ErrorLine(const absl::Status& st, const std::string& server) {
  const std::string msg(st.code() == absl::StatusCode::kResourceExhausted
                            ? EntityTooLarge(std::string(st.message()))
                            : std::string(st.message()));
  switch (st.code()) {
    case absl::StatusCode::kNotFound:
      return "Error from server (NotFound): " + msg;
    case absl::StatusCode::kAlreadyExists:
      return "Error from server (AlreadyExists): " + msg;
    case absl::StatusCode::kAborted:
      return "Error from server (Conflict): " + msg;
    case absl::StatusCode::kInvalidArgument:
      return "Error from server (Invalid): " + msg;
    case absl::StatusCode::kFailedPrecondition:
      return "Error from server (BadRequest): " + msg;
    case absl::StatusCode::kOutOfRange:
      return "Error from server (Expired): " + msg;
    case absl::StatusCode::kPermissionDenied:
      return "Error from server (Forbidden): " + msg;
    case absl::StatusCode::kResourceExhausted:
      if (msg.find("Request entity too large: ") != std::string::npos) {
        return "Error from server (RequestEntityTooLarge): " + msg;
      }
      return "Error from server (TooManyRequests): " + msg;
    case absl::StatusCode::kUnknown:  // a 500 without a reason, e.g. etcd's refusal passed on
      return "Error from server: " + msg;
    case absl::StatusCode::kUnimplemented:
      return "Error from server (MethodNotAllowed): " + msg;
    case absl::StatusCode::kUnauthenticated:
      return "error: You must be logged in to the server (Unauthorized)";
    case absl::StatusCode::kUnavailable:
      return fmt::format(
          "The connection to the server {} was refused - did you specify the right host or port?",
          server);
    case absl::StatusCode::kDeadlineExceeded:
      return fmt::format("Unable to connect to the server {}: the request timed out", server);
    default:
      return "error: " + msg;
  }
}

absl::StatusOr<MessagePtr> Resources::Decode(const api::KindInfo& kind, const std::string& bytes,
                                             const std::string& subresource) {
  MessagePtr m = subresource == "scale" ? std::make_shared<api::Scale>()
                                        : MessagePtr(kind.New().release());
  if (!m->ParseFromString(bytes)) return absl::DataLossError("cannot decode the server's reply");
  return m;
}

absl::StatusOr<MessagePtr> Resources::Get(const api::KindInfo& kind, const std::string& ns,
                                          const std::string& name) {
  apiserver::GetRequest req;
  req.set_resource(kind.request_resource());
  req.set_namespace_(kind.namespaced ? ns : "");
  req.set_name(name);
  MKUBE_ASSIGN_OR_RETURN(auto r, client_->GetRaw(req));
  return Decode(kind, r);
}

absl::StatusOr<Resources::ListResult> Resources::List(const api::KindInfo& kind,
                                                      const std::string& ns,
                                                      const std::string& labels,
                                                      const std::string& fields) {
  ListResult out;
  std::string cont;
  do {
    apiserver::ListRequest req;
    req.set_resource(kind.request_resource());
    req.set_namespace_(kind.namespaced ? ns : "");
    req.set_label_selector(labels);
    req.set_field_selector(fields);
    req.set_limit(500);
    req.set_continue_(cont);
    MKUBE_ASSIGN_OR_RETURN(auto r, client_->List(req));
    for (const auto& item : r.items()) {
      MKUBE_ASSIGN_OR_RETURN(auto m, Decode(kind, item));
      out.items.push_back(m);
    }
    if (out.resource_version.empty()) out.resource_version = r.resource_version();
    cont = r.continue_();
  } while (!cont.empty());
  return out;
}

absl::StatusOr<MessagePtr> Resources::Create(const api::KindInfo& kind, const std::string& ns,
                                             const google::protobuf::Message& obj) {
  apiserver::CreateRequest req;
  req.set_resource(kind.request_resource());
  req.set_namespace_(kind.namespaced ? ns : "");
  req.set_object(obj.SerializeAsString());
  req.set_field_manager(kFieldManager);
  MKUBE_ASSIGN_OR_RETURN(auto r, client_->CreateRaw(req));
  return Decode(kind, r);
}

absl::StatusOr<MessagePtr> Resources::Update(const api::KindInfo& kind, const std::string& ns,
                                             const google::protobuf::Message& obj) {
  apiserver::UpdateRequest req;
  req.set_resource(kind.request_resource());
  req.set_namespace_(kind.namespaced ? ns : "");
  req.set_object(obj.SerializeAsString());
  req.set_field_manager(kFieldManager);
  MKUBE_ASSIGN_OR_RETURN(auto r, client_->UpdateRaw(req));
  return Decode(kind, r);
}

absl::StatusOr<MessagePtr> Resources::Patch(const api::KindInfo& kind, const std::string& ns,
                                            const std::string& name, const std::string& merge_patch,
                                            const std::string& subresource) {
  apiserver::PatchRequest req;
  req.set_resource(kind.request_resource());
  req.set_namespace_(kind.namespaced ? ns : "");
  req.set_name(name);
  req.set_subresource(subresource);
  req.set_merge_patch(merge_patch);
  req.set_field_manager(kFieldManager);
  MKUBE_ASSIGN_OR_RETURN(auto r, client_->PatchRaw(req));
  return Decode(kind, r, subresource);
}

absl::StatusOr<MessagePtr> Resources::ServerSideApply(const api::KindInfo& kind,
                                                      const std::string& ns,
                                                      const google::protobuf::Message& obj,
                                                      const std::string& manager, bool force) {
  apiserver::PatchRequest req;
  req.set_resource(kind.request_resource());
  req.set_namespace_(kind.namespaced ? ns : "");
  req.set_name(api::MetaOf(obj).name());
  req.set_patch_type("apply");
  req.set_merge_patch(api::EncodeJson(obj).dump());
  req.set_field_manager(manager);
  req.set_force(force);
  auto r = client_->PatchRaw(req);
  if (r.ok()) return Decode(kind, *r);
  if (r.status().code() != absl::StatusCode::kNotFound) return r.status();
  apiserver::CreateRequest create;
  create.set_resource(kind.request_resource());
  create.set_namespace_(kind.namespaced ? ns : "");
  create.set_object(obj.SerializeAsString());
  create.set_field_manager(manager);
  create.set_applied(true);
  MKUBE_ASSIGN_OR_RETURN(auto created, client_->CreateRaw(create));
  return Decode(kind, created);
}

absl::StatusOr<MessagePtr> Resources::Delete(const api::KindInfo& kind, const std::string& ns,
                                             const std::string& name,
                                             std::optional<int64_t> grace,
                                             const std::string& propagation) {
  apiserver::DeleteRequest req;
  req.set_propagation_policy(propagation);
  req.set_resource(kind.request_resource());
  req.set_namespace_(kind.namespaced ? ns : "");
  req.set_name(name);
  if (grace) req.set_grace_period_seconds(*grace);
  MKUBE_ASSIGN_OR_RETURN(auto r, client_->Delete(req));
  return Decode(kind, r);
}

}  // namespace mkube::cli
