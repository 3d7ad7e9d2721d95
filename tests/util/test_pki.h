#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace mkube::testing {

// Certificates for TLS tests, made with the openssl command (EC P-256 keys, quick to make):
// a CA; a server certificate for 127.0.0.1 and localhost; a client certificate from the same
// CA; and one from a second CA the server does not trust. Paths of PEM files in `dir`.
struct TestPki {
  std::string ca;
  std::string server_cert, server_key;
  std::string client_cert, client_key;
  std::string stranger_cert, stranger_key;  // signed by another CA
};

absl::StatusOr<TestPki> MakeTestPki(const std::string& dir);

}  // namespace mkube::testing
