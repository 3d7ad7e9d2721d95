#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;
typedef struct bio_st BIO;

// TLS for the transport, as etcd offers it: a server certificate and key, and optionally
// clients required to present a certificate signed by a trusted CA. OpenSSL does the
// cryptography on memory buffers only; the connection's loop does every read and write, so
// the answers of a group still leave in one send per connection.
namespace mkube::store::rpc {

struct TlsOptions {
  std::string cert_file;
  std::string key_file;
  // CA bundle client certificates must chain to (needed by client_cert_auth).
  std::string trusted_ca_file;
  bool client_cert_auth = false;
};

// The server's certificate, key and client policy, loaded once and shared by every
// connection. ALPN: "h2" is chosen when offered; a client offering only other protocols is
// refused (no_application_protocol), one offering none is served.
class TlsContext {
 public:
  static absl::StatusOr<std::shared_ptr<TlsContext>> Load(const TlsOptions& options);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  SSL_CTX* ctx() const { return ctx_; }

 private:
  explicit TlsContext(SSL_CTX* ctx) : ctx_(ctx) {}
  SSL_CTX* ctx_;
};

// The server side of one TLS connection over memory buffers.
class TlsSession {
 public:
  explicit TlsSession(const TlsContext& context);
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  // Takes bytes received from the client; appends the plaintext they complete to `plain`.
  // The handshake runs inside. An error (a failed handshake, a bad record) ends the
  // connection; so does the client's close_notify (closed() then says so).
  absl::Status Receive(std::string_view cipher, std::string* plain);
  // Encrypts `plain` (only once the handshake is done: ready()).
  absl::Status Send(std::string_view plain);
  bool ready() const;
  bool closed() const { return closed_; }
  // Bytes for the socket: records and handshake messages not yet taken by the caller.
  std::string& output() { return output_; }

 private:
  void Collect();

  SSL* ssl_;
  BIO* in_;   // what the client sent, for OpenSSL to read
  BIO* out_;  // what OpenSSL wrote, for the socket
  std::string output_;
  bool closed_ = false;
};

}  // namespace mkube::store::rpc
