#include "store/rpc/tls.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cstring>

#include "fmt/format.h"

namespace mkube::store::rpc {
namespace {

// OpenSSL's queued errors as one line (and the queue emptied).
std::string Errors() {
  std::string out;
  while (const unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "unknown error" : out;
}

int SelectAlpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
               unsigned int inlen, void*) {
  for (unsigned int i = 0; i < inlen;) {
    const unsigned int n = in[i];
    if (i + 1 + n > inlen) break;
    if (n == 2 && std::memcmp(in + i + 1, "h2", 2) == 0) {
      *out = in + i + 1;
      *outlen = 2;
      return SSL_TLSEXT_ERR_OK;
    }
    i += 1 + n;
  }
  return SSL_TLSEXT_ERR_ALERT_FATAL;  // HTTP/2 only: no_application_protocol
}

}  // namespace

absl::StatusOr<std::shared_ptr<TlsContext>> TlsContext::Load(const TlsOptions& options) {
  if (options.cert_file.empty() || options.key_file.empty()) {
    return absl::InvalidArgumentError("TLS needs both a certificate file and a key file");
  }
  if (options.client_cert_auth && options.trusted_ca_file.empty()) {
    return absl::InvalidArgumentError("client certificate authentication needs a trusted CA file");
  }
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) return absl::InternalError("TLS: " + Errors());
  std::shared_ptr<TlsContext> context(new TlsContext(ctx));
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
  if (SSL_CTX_use_certificate_chain_file(ctx, options.cert_file.c_str()) != 1) {
    return absl::InvalidArgumentError(
        fmt::format("certificate file {}: {}", options.cert_file, Errors()));
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, options.key_file.c_str(), SSL_FILETYPE_PEM) != 1 &&
      ERR_GET_REASON(ERR_peek_last_error()) != X509_R_KEY_VALUES_MISMATCH) {
    return absl::InvalidArgumentError(fmt::format("key file {}: {}", options.key_file, Errors()));
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(fmt::format("key file {} does not match certificate file {}",
                                                  options.key_file, options.cert_file));
  }
  if (!options.trusted_ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(ctx, options.trusted_ca_file.c_str(), nullptr) != 1) {
      return absl::InvalidArgumentError(
          fmt::format("trusted CA file {}: {}", options.trusted_ca_file, Errors()));
    }
    if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(options.trusted_ca_file.c_str())) {
      SSL_CTX_set_client_CA_list(ctx, names);
    }
  }
  if (options.client_cert_auth) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  SSL_CTX_set_alpn_select_cb(ctx, SelectAlpn, nullptr);
  return context;
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

TlsSession::TlsSession(const TlsContext& context)
    : ssl_(SSL_new(context.ctx())), in_(BIO_new(BIO_s_mem())), out_(BIO_new(BIO_s_mem())) {
  // An empty memory BIO reads as "retry later", not as the end of the stream.
  BIO_set_mem_eof_return(in_, -1);
  BIO_set_mem_eof_return(out_, -1);
  SSL_set_bio(ssl_, in_, out_);  // the session owns both from here
  SSL_set_accept_state(ssl_);
}

TlsSession::~TlsSession() { SSL_free(ssl_); }

bool TlsSession::ready() const { return SSL_is_init_finished(ssl_); }

void TlsSession::Collect() {
  const size_t n = BIO_ctrl_pending(out_);
  if (n == 0) return;
  const size_t at = output_.size();
  output_.resize(at + n);
  BIO_read(out_, output_.data() + at, static_cast<int>(n));
}

absl::Status TlsSession::Receive(std::string_view cipher, std::string* plain) {
  if (closed_) return absl::OkStatus();
  if (!cipher.empty() && BIO_write(in_, cipher.data(), static_cast<int>(cipher.size())) <= 0) {
    return absl::InternalError("TLS: cannot buffer input");
  }
  ERR_clear_error();
  absl::Status status;
  for (;;) {
    const size_t at = plain->size();
    plain->resize(at + (16 << 10));  // one record's plaintext at most
    const int n = SSL_read(ssl_, plain->data() + at, 16 << 10);
    plain->resize(at + (n > 0 ? n : 0));
    if (n > 0) continue;
    const int error = SSL_get_error(ssl_, n);
    if (error == SSL_ERROR_WANT_READ) break;
    if (error == SSL_ERROR_ZERO_RETURN) {
      closed_ = true;
      break;
    }
    status = absl::UnavailableError(
        fmt::format("TLS {}: {}", ready() ? "record" : "handshake", Errors()));
    break;
  }
  Collect();  // handshake messages, alerts, session tickets
  return status;
}

absl::Status TlsSession::Send(std::string_view plain) {
  ERR_clear_error();
  while (!plain.empty()) {
    const int chunk = static_cast<int>(std::min<size_t>(plain.size(), 1 << 30));
    const int n = SSL_write(ssl_, plain.data(), chunk);
    if (n <= 0) return absl::InternalError("TLS: " + Errors());
    plain.remove_prefix(n);
  }
  Collect();
  return absl::OkStatus();
}

}  // namespace mkube::store::rpc
