// How the apiserver reaches node agents: where a Node says, with TLS when it has agent
// credentials, and with the plaintext token only to loopback addresses.
#include "apiserver/server/agents.h"

#include <gtest/gtest.h>

namespace mkube::apiserver::server {
namespace {

api::Node NodeAt(const std::string& name, const std::string& ip, int port) {
  api::Node n;
  n.mutable_metadata()->set_name(name);
  if (!ip.empty()) {
    auto* a = n.mutable_status()->add_addresses();
    a->set_type("InternalIP");
    a->set_address(ip);
  }
  n.mutable_status()->mutable_daemon_endpoints()->mutable_kubelet_endpoint()->set_port(port);
  return n;
}

TEST(Agents, TheTokenGoesToLoopbackAddressesOnly) {
  Agents agents(AgentCredentials{.token = "t"});
  EXPECT_TRUE(agents.ChannelTo(NodeAt("a", "127.0.3.2", 10250)).ok());
  EXPECT_TRUE(agents.ChannelTo(NodeAt("b", "::1", 10250)).ok());
  auto far = agents.ChannelTo(NodeAt("c", "10.0.0.7", 10250));
  ASSERT_FALSE(far.ok());
  EXPECT_EQ(far.status().message(),
            "node \"c\" is at 10.0.0.7, not a loopback address: reaching its agent needs TLS "
            "(start the apiserver with --agent-client-certificate, --agent-client-key and "
            "--agent-certificate-authority)");
}

TEST(Agents, WithTlsEveryAddressAndOneChannelPerNodeAndAddress) {
  Agents agents(AgentCredentials{.ca_pem = "ca", .cert_pem = "cert", .key_pem = "key"});
  auto a = agents.ChannelTo(NodeAt("a", "10.0.0.7", 10250));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(*a, *agents.ChannelTo(NodeAt("a", "10.0.0.7", 10250)));
  // Another node at the same address is checked against its own name: another channel.
  EXPECT_NE(*a, *agents.ChannelTo(NodeAt("b", "10.0.0.7", 10250)));
}

TEST(Agents, ANodeThatHasNotSaidWhereItsAgentIs) {
  Agents agents(AgentCredentials{.token = "t"});
  EXPECT_EQ(agents.ChannelTo(NodeAt("a", "", 10250)).status().message(),
            "node \"a\" has not reported where its agent listens");
  Agents none(AgentCredentials{});
  EXPECT_EQ(none.ChannelTo(NodeAt("a", "127.0.0.1", 10250)).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace mkube::apiserver::server
