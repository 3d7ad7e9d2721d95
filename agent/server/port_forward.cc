#include "agent/server/port_forward.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "agent/server/agent_service.h"
#include "client/send_all.h"
#include "fmt/format.h"
#include "proto/grpc_status.h"

namespace mkube::agent::server {

namespace {

constexpr size_t kChunk = 32 * 1024;

}  // namespace

grpc::Status PortForwardService::Forward(
    grpc::ServerContext* ctx, grpc::ServerReaderWriter<PortForwardData, PortForwardData>* stream) {
  if (auto st = auth_->Check(ctx); !st.ok()) return st;
  PortForwardData first;
  if (!stream->Read(&first) || !first.has_start()) {
    return {grpc::StatusCode::INVALID_ARGUMENT, "the first message must name the pod and port"};
  }
  const PortForwardStart& start = first.start();
  if (start.port() <= 0 || start.port() > 65535) {
    return {grpc::StatusCode::INVALID_ARGUMENT, fmt::format("invalid port {}", start.port())};
  }
  auto ip = pods_->PodIp(start.namespace_(), start.pod(), start.pod_uid());
  if (!ip.ok()) return ToGrpc(ip.status());
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(start.port()));
  if (inet_pton(AF_INET, ip->c_str(), &addr.sin_addr) != 1) {
    return {grpc::StatusCode::INTERNAL, fmt::format("pod address {} is not IPv4", *ip)};
  }
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return {grpc::StatusCode::INTERNAL, "socket"};
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const std::string why = std::strerror(errno);
    close(fd);
    // Not UNAVAILABLE: that is the apiserver's word for an agent it cannot reach.
    return {grpc::StatusCode::FAILED_PRECONDITION,
            fmt::format("error forwarding port {} to pod {}: dial tcp {}:{}: connect: {}",
                        start.port(), start.pod(), *ip, start.port(), why)};
  }
  if (!stream->Write(PortForwardData())) {  // connected
    close(fd);
    return grpc::Status::OK;
  }
  // The caller's bytes to the pod on a thread of their own; the pod's to the caller here.
  std::thread up([&] {
    PortForwardData in;
    bool open = true;
    while (open && stream->Read(&in)) open = client::SendAll(fd, in.data());
    // The caller is done sending (a caller that is gone is noticed by the loop below).
    shutdown(fd, SHUT_WR);
    while (!open && stream->Read(&in)) {  // the pod stopped reading: drain the caller
    }
  });
  std::string buf(kChunk, '\0');
  for (;;) {
    // A caller that went away cuts the connection, which also ends a send blocked above.
    pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
    if (poll(&p, 1, 200) == 0) {
      if (ctx->IsCancelled()) {
        shutdown(fd, SHUT_RDWR);
        break;
      }
      continue;
    }
    const ssize_t n = read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    PortForwardData out;
    out.set_data(buf.data(), static_cast<size_t>(n));
    if (!stream->Write(out)) break;
  }
  PortForwardData end;
  end.set_closed(true);
  stream->Write(end);
  up.join();
  close(fd);
  return grpc::Status::OK;
}

}  // namespace mkube::agent::server
