#pragma once

#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "client/client.h"

namespace mkube::client {

// A file's content without trailing whitespace (a token file's newline).
absl::StatusOr<std::string> ReadSecretFile(const std::string& path);

// How a daemon reaches the apiserver, from its flags: the bearer token in `token_file`, the
// CA in `ca_file` (TLS) or plaintext when `insecure`; each error names the flag. Its calls wait
// for the apiserver while it is away (wait_for_ready).
absl::StatusOr<ClientOptions> DaemonClientOptions(const std::string& address,
                                                  const std::string& token_file,
                                                  const std::string& ca_file, bool insecure);

// The flags by which a daemon reaches the apiserver: --apiserver, --token-file, --ca-file and
// --insecure-plaintext.
struct ApiserverFlags {
  std::string address = "127.0.0.1:6443";
  std::string token_file, ca_file;
  bool insecure = false;

  // Adds them to `app`; `whose` names the token's owner in the help ("the scheduler's").
  void Register(CLI::App& app, const std::string& whose);
  // DaemonClientOptions of the flags' values.
  absl::StatusOr<ClientOptions> Options() const;
};

}  // namespace mkube::client
