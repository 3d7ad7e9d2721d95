#include "client/credentials.h"

#include <fstream>
#include <sstream>

#include "fmt/format.h"

namespace mkube::client {

absl::StatusOr<std::string> ReadSecretFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(fmt::format("cannot read {}", path));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

absl::StatusOr<ClientOptions> DaemonClientOptions(const std::string& address,
                                                  const std::string& token_file,
                                                  const std::string& ca_file, bool insecure) {
  ClientOptions o;
  o.address = address;
  // A daemon's calls wait through an apiserver restart (within their timeout), and so keep
  // its connection being made: see ClientOptions::wait_for_ready.
  o.wait_for_ready = true;
  auto token = ReadSecretFile(token_file);
  if (!token.ok() || token->empty()) {
    return absl::InvalidArgumentError(
        fmt::format("cannot read a token from --token-file {}", token_file));
  }
  o.token = *token;
  if (!ca_file.empty()) {
    std::ifstream in(ca_file);
    if (!in) return absl::InvalidArgumentError(fmt::format("cannot read --ca-file {}", ca_file));
    std::stringstream ss;
    ss << in.rdbuf();
    o.ca_pem = ss.str();
  } else if (!insecure) {
    return absl::InvalidArgumentError(
        "pass --ca-file to verify the apiserver, or --insecure-plaintext");
  }
  return o;
}

void ApiserverFlags::Register(CLI::App& app, const std::string& whose) {
  app.add_option("--apiserver", address, "The apiserver's address")->capture_default_str();
  app.add_option("--token-file", token_file, "File with " + whose + " bearer token")->required();
  app.add_option("--ca-file", ca_file, "CA that signed the apiserver's certificate");
  app.add_flag("--insecure-plaintext", insecure, "Talk to the apiserver without TLS");
}

absl::StatusOr<ClientOptions> ApiserverFlags::Options() const {
  return DaemonClientOptions(address, token_file, ca_file, insecure);
}

}  // namespace mkube::client
