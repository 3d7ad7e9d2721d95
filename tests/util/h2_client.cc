#include "tests/util/h2_client.h"

#include <nghttp2/nghttp2.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "tests/util/raw_h2.h"

namespace mkube::testing::h2 {
namespace {

struct Run {
  std::vector<Call>* calls;
  std::vector<size_t> sent;  // of each call's body
  size_t ended = 0;
  nghttp2_session* h2 = nullptr;
};

Call* CallOf(nghttp2_session* h2, int32_t id) {
  return static_cast<Call*>(nghttp2_session_get_stream_user_data(h2, id));
}

int OnHeader(nghttp2_session* h2, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
             const uint8_t* value, size_t valuelen, uint8_t, void*) {
  Call* c = CallOf(h2, frame->hd.stream_id);
  if (!c) return 0;
  std::string k(reinterpret_cast<const char*>(name), namelen);
  std::string v(reinterpret_cast<const char*>(value), valuelen);
  if (k == ":status") {
    c->status = std::stoi(v);
  } else {
    c->headers.emplace_back(std::move(k), std::move(v));
  }
  return 0;
}

int OnData(nghttp2_session* h2, uint8_t, int32_t id, const uint8_t* data, size_t len, void*) {
  Call* c = CallOf(h2, id);
  if (!c || c->closed) return 0;
  c->got.append(reinterpret_cast<const char*>(data), len);
  if (c->cancel_after && c->got.size() >= c->cancel_after) {
    nghttp2_submit_rst_stream(h2, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
  }
  return 0;
}

int OnClose(nghttp2_session* h2, int32_t id, uint32_t, void* user) {
  if (Call* c = CallOf(h2, id); c && !c->closed) {
    c->closed = true;
    ++static_cast<Run*>(user)->ended;
  }
  return 0;
}

ssize_t ReadBody(nghttp2_session*, int32_t, uint8_t* buf, size_t length, uint32_t* flags,
                 nghttp2_data_source* source, void* user) {
  auto* run = static_cast<Run*>(user);
  const auto i = static_cast<size_t>(reinterpret_cast<intptr_t>(source->ptr));
  const std::string& body = (*run->calls)[i].body;
  const size_t n = std::min(length, body.size() - run->sent[i]);
  std::memcpy(buf, body.data() + run->sent[i], n);
  run->sent[i] += n;
  if (run->sent[i] == body.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
  return static_cast<ssize_t>(n);
}

void Submit(Run& run, size_t i, const std::string& authority) {
  Call& c = (*run.calls)[i];
  std::string scheme = "https";
  const std::pair<std::string*, const std::string*> fields[] = {
      {nullptr, &c.method}, {nullptr, &scheme}, {nullptr, &authority}, {nullptr, &c.path}};
  static const char* const kNames[] = {":method", ":scheme", ":authority", ":path"};
  std::vector<nghttp2_nv> nv;
  for (size_t f = 0; f < std::size(fields); ++f) {
    nv.push_back({reinterpret_cast<uint8_t*>(const_cast<char*>(kNames[f])),
                  reinterpret_cast<uint8_t*>(const_cast<char*>(fields[f].second->data())),
                  std::strlen(kNames[f]), fields[f].second->size(), NGHTTP2_NV_FLAG_NONE});
  }
  nghttp2_data_provider body{};
  body.source.ptr = reinterpret_cast<void*>(static_cast<intptr_t>(i));
  body.read_callback = ReadBody;
  nghttp2_submit_request(run.h2, nullptr, nv.data(), nv.size(), c.body.empty() ? nullptr : &body,
                         &c);
}

// Sends what the session has, then reads what arrived (waiting up to `wait`): false when the
// connection failed.
bool Exchange(Run& run, SSL* ssl, int fd, int wait_ms) {
  const uint8_t* data = nullptr;
  ssize_t n;
  while ((n = nghttp2_session_mem_send(run.h2, &data)) > 0) {
    if (SSL_write(ssl, data, static_cast<int>(n)) != n) return false;
  }
  if (n < 0) return false;
  pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
  if (SSL_pending(ssl) == 0 && poll(&p, 1, wait_ms) <= 0) return true;
  char buf[16 << 10];
  const int got = SSL_read(ssl, buf, sizeof buf);
  if (got <= 0) return false;
  return nghttp2_session_mem_recv(run.h2, reinterpret_cast<uint8_t*>(buf), got) == got;
}

}  // namespace

std::string RunCalls(const Connection& to, std::vector<Call>& calls) {
  const std::string authority = "127.0.0.1:" + std::to_string(to.port);
  const int fd = ConnectTcp(authority);
  if (fd < 0) return "cannot connect to " + authority;
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_client_method()),
                                                        SSL_CTX_free);
  static const unsigned char kAlpn[] = "\x02h2";
  SSL_CTX_set_alpn_protos(ctx.get(), kAlpn, sizeof kAlpn - 1);
  if (!to.client_cert.empty() &&
      (SSL_CTX_use_certificate_chain_file(ctx.get(), to.client_cert.c_str()) != 1 ||
       SSL_CTX_use_PrivateKey_file(ctx.get(), to.client_key.c_str(), SSL_FILETYPE_PEM) != 1)) {
    close(fd);
    return "cannot load the client certificate " + to.client_cert;
  }
  std::unique_ptr<SSL, decltype(&SSL_free)> ssl(SSL_new(ctx.get()), SSL_free);
  SSL_set_fd(ssl.get(), fd);
  std::string error;
  const unsigned char* proto = nullptr;
  unsigned int proto_len = 0;
  if (SSL_connect(ssl.get()) != 1) {
    error = "the TLS handshake failed";
  } else if (SSL_get0_alpn_selected(ssl.get(), &proto, &proto_len),
             proto_len != 2 || std::memcmp(proto, "h2", 2) != 0) {
    error = "the server did not choose h2";
  }
  if (!error.empty()) {
    close(fd);
    return error;
  }
  Run run{.calls = &calls, .sent = std::vector<size_t>(calls.size(), 0)};
  nghttp2_session_callbacks* cb = nullptr;
  nghttp2_session_callbacks_new(&cb);
  nghttp2_session_callbacks_set_on_header_callback(cb, OnHeader);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, OnData);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, OnClose);
  nghttp2_session_client_new(&run.h2, cb, &run);
  nghttp2_session_callbacks_del(cb);
  const nghttp2_settings_entry window{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 16 << 20};
  nghttp2_submit_settings(run.h2, NGHTTP2_FLAG_NONE, &window, 1);
  nghttp2_session_set_local_window_size(run.h2, NGHTTP2_FLAG_NONE, 0, 64 << 20);
  for (size_t i = 0; i < calls.size(); ++i) Submit(run, i, authority);
  const auto until = std::chrono::steady_clock::now() + to.deadline;
  while (run.ended < calls.size()) {
    if (std::chrono::steady_clock::now() > until) {
      error = "the calls had not ended in time";
      break;
    }
    if (!Exchange(run, ssl.get(), fd, 100)) {
      error = "the connection failed";
      break;
    }
  }
  nghttp2_session_del(run.h2);
  close(fd);
  return error;
}

}  // namespace mkube::testing::h2
