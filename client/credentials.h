#pragma once

#include <string>

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

}  // namespace mkube::client
