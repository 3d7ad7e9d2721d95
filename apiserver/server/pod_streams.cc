#include "apiserver/server/pod_streams.h"

#include <thread>

#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "apiserver/server/metadata.h"
#include "base/log.h"
#include "base/status.h"
#include "fmt/format.h"
#include "proto/api/core.pb.h"
#include "proto/grpc_status.h"

namespace mkube::apiserver::server {

namespace {

spdlog::logger& Log() {
  static spdlog::logger& logger = log::Logger("streams");
  return logger;
}

// Relays a two-way stream between the caller and an agent, `first` (what to do) having been
// read from the caller. The agent answers with one message once it has started, or fails
// the call; only then is the caller's input relayed (so a failure is returned as it is, at
// once). Input goes to the agent on a thread of its own, output back on this one.
template <typename In, typename Out>
grpc::Status Relay(grpc::ServerContext* ctx, grpc::ServerReaderWriter<Out, In>* caller,
                   grpc::ClientReaderWriter<In, Out>* agent, grpc::ClientContext* actx,
                   const In& first) {
  Out out;
  if (!agent->Write(first) || !agent->Read(&out)) return agent->Finish();
  if (!caller->Write(out)) {
    actx->TryCancel();
    agent->Finish();
    return {grpc::StatusCode::CANCELLED, "the caller went away"};
  }
  absl::Mutex mu;
  bool input_done = false;  // guarded by mu (a local cannot carry the annotation)
  std::thread input([&] {
    In in;
    while (caller->Read(&in)) {
      if (!agent->Write(in)) break;
    }
    agent->WritesDone();
    absl::MutexLock lock(&mu);
    input_done = true;
  });
  while (agent->Read(&out)) {
    if (!caller->Write(out)) {
      actx->TryCancel();
      break;
    }
  }
  bool caller_done;
  {
    // The caller half-closes once it has seen the end; one that does not is cut off.
    absl::MutexLock lock(&mu);
    caller_done = mu.AwaitWithTimeout(absl::Condition(&input_done), absl::Seconds(2));
  }
  if (!caller_done) ctx->TryCancel();
  input.join();
  return agent->Finish();
}

}  // namespace

grpc::Status FromAgent(const grpc::Status& st, const std::string& node) {
  if (st.error_code() != grpc::StatusCode::UNAVAILABLE) return st;
  return {grpc::StatusCode::INTERNAL,
          fmt::format("cannot reach the agent of node \"{}\": {}", node, st.error_message())};
}

absl::StatusOr<PodTargets::Target> PodTargets::Resolve(const registry::Caller& caller,
                                                      const std::string& verb,
                                                      const std::string& subresource,
                                                      const std::string& ns,
                                                      const std::string& name,
                                                      const std::string& container) const {
  MKUBE_RETURN_IF_ERROR(gate_->Check(caller, {verb, "pods", subresource, ns, name, ""}));
  MKUBE_ASSIGN_OR_RETURN(auto pod, registry_->GetAs<api::Pod>("pods", ns, name));
  Target t;
  t.pod_uid = pod.metadata().uid();
  t.container = container;
  if (subresource == "portforward") {
    // A pod's ports are the pod's, not a container's.
  } else if (t.container.empty()) {
    if (pod.spec().containers_size() != 1) {
      std::vector<std::string> names;
      for (const auto& c : pod.spec().containers()) names.push_back(c.name());
      return absl::FailedPreconditionError(
          fmt::format("a container name must be specified for pod {}, choose one of: [{}]", name,
                      absl::StrJoin(names, " ")));
    }
    t.container = pod.spec().containers(0).name();
  } else {
    bool known = false;
    for (const auto& c : pod.spec().containers()) known |= c.name() == container;
    if (!known) {
      return absl::FailedPreconditionError(
          fmt::format("container {} is not valid for pod {}", container, name));
    }
  }
  const std::string& node_name = pod.spec().node_name();
  if (node_name.empty()) {
    return absl::FailedPreconditionError(fmt::format("pod {} does not have a host assigned", name));
  }
  auto node = registry_->GetAs<api::Node>("nodes", "", node_name);
  if (!node.ok()) {
    return absl::FailedPreconditionError(
        fmt::format("node \"{}\" of pod {} is not known: {}", node_name, name,
                    std::string(node.status().message())));
  }
  MKUBE_ASSIGN_OR_RETURN(auto channel, agents_->ChannelTo(*node));
  t.channel = channel;
  t.node = node_name;
  return t;
}

absl::StatusOr<PodTargets::Target> PodStreamsService::Resolve(
    grpc::ServerContext* ctx, const std::string& verb, const std::string& subresource,
    const std::string& ns, const std::string& name, const std::string& container) const {
  MKUBE_ASSIGN_OR_RETURN(auto caller, authn_->Authenticate(AuthorizationHeader(*ctx)));
  return targets_->Resolve(caller, verb, subresource, ns, name, container);
}

std::unique_ptr<grpc::ClientContext> PodStreamsService::AgentContext(grpc::ServerContext* ctx) const {
  // Cancelled with the caller's call, and no later than its deadline.
  auto c = grpc::ClientContext::FromServerContext(*ctx);
  targets_->Authorize(c.get());
  return c;
}

grpc::Status PodStreamsService::Logs(grpc::ServerContext* ctx, const agent::LogRequest* req,
                                     grpc::ServerWriter<agent::LogChunk>* writer) {
  auto target = Resolve(ctx, "get", "log", req->namespace_(), req->pod(), req->container());
  if (!target.ok()) return ToGrpc(target.status());
  agent::LogRequest forward = *req;
  forward.set_container(target->container);
  forward.set_pod_uid(target->pod_uid);
  auto actx = AgentContext(ctx);
  auto stub = agent::Agent::NewStub(target->channel);
  auto reader = stub->Logs(actx.get(), forward);
  agent::LogChunk chunk;
  while (reader->Read(&chunk)) {
    if (!writer->Write(chunk)) {
      actx->TryCancel();
      break;
    }
  }
  return FromAgent(reader->Finish(), target->node);
}

grpc::Status PodStreamsService::Exec(
    grpc::ServerContext* ctx, grpc::ServerReaderWriter<agent::ExecOutput, agent::ExecInput>* stream) {
  agent::ExecInput first;
  if (!stream->Read(&first) || !first.has_start()) {
    return {grpc::StatusCode::INVALID_ARGUMENT, "the first message must say what to run"};
  }
  auto* start = first.mutable_start();
  auto target = Resolve(ctx, "create", "exec", start->namespace_(), start->pod(), start->container());
  if (!target.ok()) return ToGrpc(target.status());
  start->set_container(target->container);
  start->set_pod_uid(target->pod_uid);
  Log().info("exec in pod {}/{} [{}]", start->namespace_(), start->pod(), target->container);
  auto actx = AgentContext(ctx);
  auto stub = agent::Agent::NewStub(target->channel);
  auto agent = stub->Exec(actx.get());
  return FromAgent(Relay(ctx, stream, agent.get(), actx.get(), first), target->node);
}

grpc::Status PodPortForwardService::Forward(
    grpc::ServerContext* ctx,
    grpc::ServerReaderWriter<agent::PortForwardData, agent::PortForwardData>* stream) {
  agent::PortForwardData first;
  if (!stream->Read(&first) || !first.has_start()) {
    return {grpc::StatusCode::INVALID_ARGUMENT, "the first message must name the pod and port"};
  }
  auto* start = first.mutable_start();
  auto target =
      streams_->Resolve(ctx, "create", "portforward", start->namespace_(), start->pod(), "");
  if (!target.ok()) return ToGrpc(target.status());
  start->set_pod_uid(target->pod_uid);
  auto actx = streams_->AgentContext(ctx);
  auto stub = agent::PortForward::NewStub(target->channel);
  auto agent = stub->Forward(actx.get());
  return FromAgent(Relay(ctx, stream, agent.get(), actx.get(), first), target->node);
}

}  // namespace mkube::apiserver::server
