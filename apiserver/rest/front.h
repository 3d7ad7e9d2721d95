#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "apiserver/registry/registry.h"
#include "apiserver/rest/encoding.h"
#include "apiserver/rest/paths.h"
#include "apiserver/server/gate.h"
#include "apiserver/server/metrics.h"
#include "apiserver/server/pod_streams.h"
#include "apiserver/server/request_metrics.h"
#include "apiserver/server/sized_writes.h"
#include "base/executor.h"
#include "base/http/health.h"
#include "base/http/server.h"
#include "base/metrics.h"

// The Kubernetes HTTP/JSON API over the registry: the second thin adapter beside the gRPC
// one, with the same authentication, authorization, registry and watch cache, so kubectl,
// client-go, the Python client and Prometheus reach the same objects under the same rules.
namespace mkube::apiserver::rest {

struct FrontOptions {
  size_t workers = 8;  // threads for requests that wait on the store
  // Requests that may wait for a worker; past it: 429 with Retry-After.
  size_t max_waiting_requests = Executor::kDefaultMaxWaiting;
  // A watch that names no timeoutSeconds ends after between this and twice this, as
  // kube-apiserver's --min-request-timeout has it.
  std::chrono::seconds min_request_timeout{1800};
};

class Deadlines;
class Relays;

class Front {
 public:
  // `metrics_api`: metrics.k8s.io (absent: not served). `pods`: the agents behind logs, exec,
  // attach and port forwarding (absent: not served). `health`: /livez and /readyz checks.
  Front(registry::Registry* registry, const server::Gate* gate, server::SizedWrites* writes,
        server::MetricsApi* metrics_api, const server::PodTargets* pods,
        mkube::http::HealthChecks health, metrics::Registry* metrics, FrontOptions options = {});
  ~Front();

  // The server's handler: answers on the I/O thread what costs nothing (health, discovery),
  // hands the rest to the workers.
  void Handle(mkube::http::Request req, mkube::http::ExchangePtr ex);
  // Ends every watch and every relayed stream; afterwards new ones are refused. Call it once
  // the HTTP server has stopped (a relay may wait for a client until then). Idempotent.
  void Stop();

  // One request, once parsed and authenticated.
  struct Call {
    mkube::http::Request req;
    mkube::http::ExchangePtr ex;
    registry::Caller caller;
    Target target;
    std::map<std::string, std::string> query;
    std::string verb;  // Kubernetes' verb: get, list, watch, create, ...
    std::chrono::steady_clock::time_point start;
    // Warnings for the client (Warning: 299 headers): unknown fields under fieldValidation=Warn.
    std::vector<std::string> warnings;
    std::string Param(const std::string& k) const {
      auto it = query.find(k);
      return it == query.end() ? "" : it->second;
    }
    // A boolean parameter as Go's strconv.ParseBool reads it (1, t, T, true, TRUE, True).
    bool Flag(const std::string& k) const {
      auto v = Param(k);
      return v == "1" || v == "t" || v == "T" || v == "true" || v == "TRUE" || v == "True";
    }
  };

 private:
  // Discovery, OpenAPI and /metrics, for an authenticated caller.
  void HandleNonResource(const mkube::http::Request& req, const mkube::http::ExchangePtr& ex);
  absl::StatusOr<registry::Caller> Authenticate(const mkube::http::Request& req) const;
  void Serve(std::shared_ptr<Call> call);
  void Answer(Call& call, mkube::http::Response r);
  void Fail(Call& call, const absl::Status& st);
  // Answers a write (or a read of a scale) with what it returned, or its error.
  void Written(Call& call, absl::StatusOr<std::string> bytes, int code);

  // The verbs (resources.cc).
  void Get(Call& call);
  void List(Call& call);
  void ListMeasured(Call& call, const ListRequest& r);
  void Create(Call& call);
  void Update(Call& call);
  void Patch(Call& call);
  void Delete(Call& call);
  void DeleteCollection(Call& call);
  void CreateSubresource(Call& call);
  void Review(Call& call);
  // watch.cc
  void Watch(std::shared_ptr<Call> call);
  // streams.cc: pods/log; pods/exec and pods/attach over WebSocket; portforward.cc.
  void Logs(std::shared_ptr<Call> call);
  void RemoteCommandCall(std::shared_ptr<Call> call);
  void PortForward(std::shared_ptr<Call> call);
  class RemoteCommand;
  class PortForwardTunnel;

  // The object a request's body holds, as the path's kind; the error a 400 BadRequest.
  // The body's object; fields its kind has not are refused, or left out (and warned about) as
  // the request's fieldValidation says.
  absl::StatusOr<std::unique_ptr<google::protobuf::Message>> DecodeBody(Call& call) const;
  void Record(const Call& call, int code);

  registry::Registry* registry_;
  const server::Gate* gate_;
  server::SizedWrites* writes_;
  server::MetricsApi* metrics_api_;
  const server::PodTargets* pods_;
  const mkube::http::HealthChecks health_;
  metrics::Registry* metrics_;
  const FrontOptions options_;
  std::unique_ptr<Deadlines> deadlines_;
  std::unique_ptr<Relays> relays_;
  server::RequestMetrics requests_;
  metrics::Family<metrics::Gauge>& longrunning_;
  // Last: its workers use the members above, so it goes (joining them) first.
  Executor executor_;
};

// How a write treats fields its kind has not (the fieldValidation parameter): refused (400,
// "strict decoding error: unknown field ..."), left out with a warning (the default, as in
// Kubernetes), or left out silently.
enum class FieldValidation { kStrict, kWarn, kIgnore };
// The request's; a BadRequest naming the value for one Kubernetes has not.
absl::StatusOr<FieldValidation> FieldValidationOf(const Front::Call& c);
// A field the kind has not, in Kubernetes' words (warnings and strict errors): unknown field
// "spec.foo".
std::string UnknownField(const std::string& path);

}  // namespace mkube::apiserver::rest
