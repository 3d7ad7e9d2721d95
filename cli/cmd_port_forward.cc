// port-forward: local TCP ports to a pod's ports, through the apiserver and the pod's agent
// (one stream per connection), as kubectl port-forward does.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <mutex>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "cli/commands.h"
#include "client/channel.h"
#include "client/send_all.h"
#include "fmt/format.h"
#include "proto/api/core.pb.h"
#include "proto/apiserver/port_forward.grpc.pb.h"

namespace mkube::cli {

namespace {

struct PortPair {
  int local = 0;  // 0: any free port
  int remote = 0;
  std::string remote_text;
};

// "8080:80", "80" (the same port here), ":80" (any free port here); the pod's port may be
// a container port's name.
absl::StatusOr<PortPair> ParsePorts(const std::string& spec, const api::Pod& pod) {
  std::vector<std::string> parts = absl::StrSplit(spec, ':');
  if (parts.size() > 2) return UserError(fmt::format("error: invalid port format '{}'", spec));
  PortPair p;
  p.remote_text = parts.back();
  if (!absl::SimpleAtoi(p.remote_text, &p.remote)) {
    p.remote = 0;  // not a number (SimpleAtoi may leave a prefix's value): a port's name
    for (const auto& c : pod.spec().containers()) {
      for (const auto& port : c.ports()) {
        if (port.name() == p.remote_text) p.remote = port.container_port();
      }
    }
    if (p.remote == 0) {
      return UserError(fmt::format("error: Pod '{}' does not have a named port '{}'",
                                   pod.metadata().name(), p.remote_text));
    }
  }
  if (p.remote <= 0 || p.remote > 65535) {
    return UserError(fmt::format("error: Error parsing remote port '{}'", p.remote_text));
  }
  p.local = p.remote;
  if (parts.size() == 2) {
    p.local = 0;
    if (!parts[0].empty() &&
        (!absl::SimpleAtoi(parts[0], &p.local) || p.local < 0 || p.local > 65535)) {
      return UserError(fmt::format("error: Error parsing local port '{}'", parts[0]));
    }
  }
  return p;
}

std::mutex print_mu;  // connections report from threads of their own

void Say(std::ostream& out, const std::string& line) {
  std::lock_guard lock(print_mu);
  out << line << std::endl;
}

// One local connection carried to the pod: the local bytes up on a thread of their own, the
// pod's back on this one; each side's end passed on as a half-close.
void Bridge(std::shared_ptr<grpc::Channel> channel, const std::string& token,
            agent::PortForwardStart start, int local_port, int fd) {
  auto stub = apiserver::PodPortForward::NewStub(channel);
  grpc::ClientContext ctx;
  if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
  auto stream = stub->Forward(&ctx);
  agent::PortForwardData msg;
  *msg.mutable_start() = start;
  if (!stream->Write(msg) || !stream->Read(&msg)) {
    stream->WritesDone();
    const grpc::Status st = stream->Finish();
    Say(std::cerr, fmt::format("E an error occurred forwarding {} -> {}: {}", local_port,
                               start.port(), st.error_message()));
    close(fd);
    return;
  }
  std::thread up([&] {
    std::string buf(32 * 1024, '\0');
    for (;;) {
      const ssize_t n = read(fd, buf.data(), buf.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      agent::PortForwardData data;
      data.set_data(buf.data(), static_cast<size_t>(n));
      if (!stream->Write(data)) break;
    }
    stream->WritesDone();
  });
  while (stream->Read(&msg)) {
    if (msg.closed()) {
      shutdown(fd, SHUT_WR);
    } else if (!client::SendAll(fd, msg.data())) {
      ctx.TryCancel();
      break;
    }
  }
  // The stream is over: end the local side's reader too, then finish the call.
  shutdown(fd, SHUT_RDWR);
  up.join();
  const grpc::Status st = stream->Finish();
  if (!st.ok()) {
    Say(std::cerr, fmt::format("E an error occurred forwarding {} -> {}: {}", local_port,
                               start.port(), st.error_message()));
  }
  close(fd);
}

absl::StatusOr<int> Listen(const std::string& address, int port) {
  const std::string ip = address == "localhost" ? "127.0.0.1" : address;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, ip.c_str(), &addr.sin_addr) != 1) {
    return UserError(fmt::format("error: {} is not a valid IP", address));
  }
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return UserError(fmt::format("error: socket: {}", std::strerror(errno)));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd, 128) != 0) {
    const std::string why = std::strerror(errno);
    close(fd);
    return UserError(
        fmt::format("Unable to listen on port {}: listen tcp4 {}:{}: bind: {}\n"
                    "error: unable to listen on any of the requested ports: [{{{} ...}}]",
                    port, ip, port, why, port));
  }
  return fd;
}

}  // namespace

absl::Status PortForward(Session& s, const std::vector<std::string>& args,
                         const PortForwardFlags& f) {
  if (args.size() < 2) {
    return UserError("error: TYPE/NAME and list of ports are required for port-forward");
  }
  MKUBE_ASSIGN_OR_RETURN(const api::Pod pod, ResolvePod(s, args[0]));
  if (pod.status().phase() != "Running") {
    return UserError(
        fmt::format("error: unable to forward port because pod is not running. Current status={}",
                    pod.status().phase()));
  }
  struct Forward {
    int listener;
    int local;
    int remote;
  };
  std::vector<Forward> forwards;
  for (size_t i = 1; i < args.size(); ++i) {
    MKUBE_ASSIGN_OR_RETURN(const PortPair p, ParsePorts(args[i], pod));
    for (const auto& address : f.addresses) {
      MKUBE_ASSIGN_OR_RETURN(const int fd, Listen(address, p.local));
      sockaddr_in bound{};
      socklen_t len = sizeof bound;
      getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
      char ip[INET_ADDRSTRLEN] = {};
      inet_ntop(AF_INET, &bound.sin_addr, ip, sizeof ip);
      forwards.push_back({fd, ntohs(bound.sin_port), p.remote});
      Say(std::cout,
          fmt::format("Forwarding from {}:{} -> {}", ip, forwards.back().local, p.remote));
    }
  }
  auto channel = client::NewChannel(s.client_options());
  std::vector<pollfd> polls;
  for (const auto& fw : forwards) polls.push_back({fw.listener, POLLIN, 0});
  for (;;) {  // until interrupted, as kubectl
    if (poll(polls.data(), polls.size(), -1) < 0 && errno != EINTR) {
      return UserError(fmt::format("error: poll: {}", std::strerror(errno)));
    }
    for (size_t i = 0; i < polls.size(); ++i) {
      if (!(polls[i].revents & POLLIN)) continue;
      const int conn = accept4(forwards[i].listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (conn < 0) continue;
      Say(std::cout, fmt::format("Handling connection for {}", forwards[i].local));
      agent::PortForwardStart start;
      start.set_namespace_(pod.metadata().namespace_());
      start.set_pod(pod.metadata().name());
      start.set_port(forwards[i].remote);
      std::thread(Bridge, channel, s.client_options().token, start, forwards[i].local, conn)
          .detach();
    }
  }
}

}  // namespace mkube::cli
