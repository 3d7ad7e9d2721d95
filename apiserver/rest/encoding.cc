#include "apiserver/rest/encoding.h"

#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "api/codec.h"
#include "api/managed_fields.h"
#include "api/object.h"
#include "api/printers.h"
#include "apiserver/server/request_metrics.h"
#include "fmt/format.h"

namespace mkube::apiserver::rest {
namespace {

using server::TooLarge;

Json Details(const Subject& about, const absl::Status& st) {
  Json d = Json::object();
  if (!about.name.empty()) d["name"] = about.name;
  if (about.kind) {
    if (!about.kind->group.empty()) d["group"] = about.kind->group;
    d["kind"] = st.code() == absl::StatusCode::kInvalidArgument ? about.kind->kind
                                                                : about.kind->resource;
  }
  if (st.code() == absl::StatusCode::kInvalidArgument) {
    // "Pod \"x\" is invalid: spec.containers[0].image: Required value": the field and why.
    std::string m(st.message());
    if (size_t at = m.find(" is invalid: "); at != std::string::npos) m = m.substr(at + 13);
    Json cause = {{"message", m}};
    if (size_t colon = m.find(": ");
        colon != std::string::npos && m.substr(0, colon).find(' ') == std::string::npos) {
      cause["field"] = m.substr(0, colon);
      cause["message"] = m.substr(colon + 2);
    }
    d["causes"] = Json::array({cause});
  }
  if (st.code() == absl::StatusCode::kResourceExhausted && !TooLarge(st)) {
    d["retryAfterSeconds"] = 1;
  }
  if (auto conflicts = st.GetPayload(api::kConflictsPayload)) {
    Json causes = Json::parse(std::string(*conflicts), nullptr, false);
    if (causes.is_array()) d["causes"] = std::move(causes);
  }
  return d;
}

// "NOMINATED NODE" as Kubernetes names its columns: "Nominated Node"; "IP" stays.
std::string ColumnName(const std::string& upper) {
  if (upper == "IP" || upper == "CPU(cores)" || upper.size() <= 2) return upper;
  std::string out;
  bool start = true;
  for (char c : upper) {
    out += start ? c : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    start = c == ' ' || c == '-';
  }
  return out;
}

const std::map<std::string, std::set<std::string>>& RequiredFields() {
  static const auto* fields = new std::map<std::string, std::set<std::string>>{
#include "apiserver/rest/required_fields.inc"
  };
  return *fields;
}

Json Zero(const google::protobuf::FieldDescriptor* f) {
  using FD = google::protobuf::FieldDescriptor;
  if (f->is_map() || (f->cpp_type() == FD::CPPTYPE_MESSAGE && !f->is_repeated())) return Json::object();
  if (f->is_repeated()) return Json::array();
  switch (f->cpp_type()) {
    case FD::CPPTYPE_BOOL: return false;
    case FD::CPPTYPE_STRING:
    case FD::CPPTYPE_ENUM: return "";
    default: return 0;
  }
}

// The fields Kubernetes always writes, put in where the encoding left them out as empty.
void FillRequired(Json& j, const google::protobuf::Descriptor* d) {
  if (!j.is_object()) return;
  auto required = RequiredFields().find(d->name());
  for (int i = 0; i < d->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = d->field(i);
    const std::string& name = f->json_name();
    auto it = j.find(name);
    if (it == j.end()) {
      if (required != RequiredFields().end() && required->second.count(name)) j[name] = Zero(f);
      continue;
    }
    if (f->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE || f->is_map()) continue;
    if (f->is_repeated()) {
      for (auto& e : *it) FillRequired(e, f->message_type());
    } else {
      FillRequired(*it, f->message_type());
    }
  }
}

}  // namespace

absl::Status NotServed() {
  return absl::NotFoundError("the server could not find the requested resource");
}

std::string Reason(const absl::Status& st) {
  switch (st.code()) {
    case absl::StatusCode::kNotFound: return "NotFound";
    case absl::StatusCode::kAlreadyExists: return "AlreadyExists";
    case absl::StatusCode::kAborted: return "Conflict";
    case absl::StatusCode::kFailedPrecondition: return "Conflict";
    case absl::StatusCode::kInvalidArgument: return "Invalid";
    case absl::StatusCode::kOutOfRange: return "Expired";
    case absl::StatusCode::kUnauthenticated: return "Unauthorized";
    case absl::StatusCode::kPermissionDenied: return "Forbidden";
    case absl::StatusCode::kResourceExhausted:
      return TooLarge(st) ? "RequestEntityTooLarge" : "TooManyRequests";
    case absl::StatusCode::kDeadlineExceeded: return "Timeout";
    case absl::StatusCode::kUnavailable: return "ServiceUnavailable";
    case absl::StatusCode::kUnimplemented: return "MethodNotAllowed";
    default: return "InternalError";
  }
}

Json StatusJson(const absl::Status& st, const Subject& about, int code, std::string_view reason) {
  Json j = {{"kind", "Status"},
            {"apiVersion", "v1"},
            {"metadata", Json::object()},
            {"status", "Failure"},
            {"message", std::string(st.message())},
            {"reason", reason.empty() ? Reason(st) : std::string(reason)}};
  Json details = Details(about, st);
  if (!details.empty()) j["details"] = std::move(details);
  j["code"] = code ? code : HttpCode(st);
  return j;
}

Json SuccessJson(int code) {
  return {{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", Json::object()},
          {"status", "Success"}, {"code", code}};
}

mkube::http::Response JsonResponse(int status, const Json& body, std::string content_type) {
  return {.status = status, .content_type = std::move(content_type), .body = body.dump()};
}

mkube::http::Response StatusResponse(const absl::Status& st, const Subject& about, int code,
                                     std::string_view reason) {
  Json body = StatusJson(st, about, code, reason);
  mkube::http::Response r = JsonResponse(body["code"].get<int>(), body);
  if (r.status == 429) r.headers.emplace_back("Retry-After", "1");
  return r;
}

mkube::http::Response ResolveRefusal(const absl::Status& st) {
  if (absl::IsFailedPrecondition(st)) return Refusal(400, "BadRequest", std::string(st.message()));
  return StatusResponse(st);
}

mkube::http::Response Refusal(int code, std::string_view reason, const std::string& message) {
  return StatusResponse(absl::UnknownError(message), {}, code, reason);
}

Json ObjectJson(const api::KindInfo& kind, const google::protobuf::Message& obj) {
  Json body = api::EncodeJson(obj);
  FillRequired(body, obj.GetDescriptor());
  Json out = {{"apiVersion", kind.api_version()}, {"kind", kind.kind}};
  for (auto& [k, v] : body.items()) {
    if (k != "apiVersion" && k != "kind") out[k] = std::move(v);
  }
  return out;
}

namespace {
struct EncodedText final : cache::EncodingMemo::Encoding {
  std::string text;
};
}  // namespace

const std::string& ObjectText(const cache::Entry& entry) {
  const auto& made = entry.encoded.GetOrMake(cache::Encoder::kJson, cache::EventType::kAdded, [&] {
    auto e = std::make_unique<EncodedText>();
    e->text = ObjectJson(*entry.kind, *entry.object).dump();
    return e;
  });
  return static_cast<const EncodedText&>(made).text;
}

absl::StatusOr<Json> ObjectJson(const api::KindInfo& kind, const std::string& bytes) {
  auto msg = kind.New();
  if (!msg->ParseFromString(bytes)) return absl::InternalError("cannot decode the stored object");
  return ObjectJson(kind, *msg);
}

Json TypedJson(const std::string& api_version, const std::string& kind,
               const google::protobuf::Message& obj) {
  Json body = api::EncodeJson(obj);
  Json out = {{"kind", kind}, {"apiVersion", api_version}};
  for (auto& [k, v] : body.items()) {
    if (k != "apiVersion" && k != "kind") out[k] = std::move(v);
  }
  return out;
}

absl::StatusOr<YAML::Node> LoadBody(const std::string& text) {
  YAML::Node doc;
  try {
    doc = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        fmt::format("the request body is not valid JSON or YAML: {}", e.msg));
  }
  if (!doc.IsMap()) {
    return absl::InvalidArgumentError("the request body must be a JSON or YAML object");
  }
  return doc;
}

absl::Status DecodeMessage(const std::string& body, google::protobuf::Message* msg) {
  auto doc = LoadBody(body);
  if (!doc.ok()) return doc.status();
  return api::DecodeNode(*doc, msg);
}

bool ReadableBody(const std::string& content_type) {
  const std::string media(absl::StripAsciiWhitespace(content_type.substr(0, content_type.find(';'))));
  // An apply patch is YAML too: applying to nothing creates from it.
  return media.empty() || media == "application/json" || media == "application/yaml" ||
         media == "application/apply-patch+yaml" ||
         media == "application/vnd.kubernetes.protobuf" || media == "*/*";
}

bool WantsTable(const std::string& accept) { return absl::StrContains(accept, "as=Table"); }

Json TableJson(const api::KindInfo& kind,
               const std::vector<const google::protobuf::Message*>& objects,
               const std::string& resource_version, const std::string& continue_token) {
  api::TableOptions wide;
  wide.wide = true;
  api::TableOptions narrow;
  const api::Table all = api::MakeTable(kind, objects, wide);
  // The -o wide columns are those the narrow table lacks; computed on no rows, it costs
  // nothing.
  const api::Table plain = api::MakeTable(kind, {}, narrow);
  std::set<std::string> always(plain.columns.begin(), plain.columns.end());
  Json columns = Json::array();
  for (size_t i = 0; i < all.columns.size(); ++i) {
    const std::string& c = all.columns[i];
    columns.push_back({{"name", ColumnName(c)},
                       {"type", "string"},
                       {"format", i == 0 ? "name" : ""},
                       {"description", ""},
                       {"priority", always.count(c) ? 0 : 1}});
  }
  Json rows = Json::array();
  for (size_t i = 0; i < all.rows.size() && i < objects.size(); ++i) {
    Json meta = api::EncodeJson(api::MetaOf(*objects[i]));
    rows.push_back({{"cells", all.rows[i]},
                    {"object",
                     {{"kind", "PartialObjectMetadata"},
                      {"apiVersion", "meta.k8s.io/v1"},
                      {"metadata", std::move(meta)}}}});
  }
  Json metadata = {{"resourceVersion", resource_version}};
  if (!continue_token.empty()) metadata["continue"] = continue_token;
  return {{"kind", "Table"},
          {"apiVersion", "meta.k8s.io/v1"},
          {"metadata", std::move(metadata)},
          {"columnDefinitions", std::move(columns)},
          {"rows", std::move(rows)}};
}

}  // namespace mkube::apiserver::rest
