// mkube-demo-server: the program inside the demo images (soscscs/myapp:v1/v2, nginx). Serves
// HTTP on $POD_IP:$PORT the way those images answer: myapp says its version and links its pod
// name at /hostname.html; nginx gives its welcome page. SIGTERM stops it at once (exit 0).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

std::string Env(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

std::string Body(const std::string& mode, const std::string& path) {
  if (mode == "nginx") {
    return "<!DOCTYPE html>\n<html>\n<head>\n<title>Welcome to nginx!</title>\n</head>\n<body>\n"
           "<h1>Welcome to nginx!</h1>\n<p>If you see this page, the nginx web server is "
           "successfully installed and working.</p>\n</body>\n</html>\n";
  }
  if (path == "/hostname.html") return Env("HOSTNAME", "localhost") + "\n";
  return "Hello MyApp | Version: " + Env("VERSION", "v1") +
         " | <a href=\"hostname.html\">Pod Name</a>\n";
}

void Serve(int fd, const std::string& mode) {
  char buf[4096];
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  if (n <= 0) return;
  buf[n] = '\0';
  std::string request(buf);
  std::string method, path = "/";
  if (auto sp = request.find(' '); sp != std::string::npos) {
    method = request.substr(0, sp);
    auto sp2 = request.find(' ', sp + 1);
    path = request.substr(sp + 1, sp2 == std::string::npos ? std::string::npos : sp2 - sp - 1);
  }
  const bool known = mode == "nginx" ? (path == "/" || path == "/index.html")
                                     : (path == "/" || path == "/index.html" || path == "/hostname.html");
  const std::string body = known ? Body(mode, path) : "404 Not Found\n";
  std::string response = std::string("HTTP/1.1 ") + (known ? "200 OK" : "404 Not Found") +
                         "\r\nServer: " + (mode == "nginx" ? "nginx" : "myapp") +
                         "\r\nContent-Type: text/html\r\nContent-Length: " +
                         std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
                         (method == "HEAD" ? "" : body);
  const char* p = response.data();
  size_t left = response.size();
  while (left > 0) {
    const ssize_t w = write(fd, p, left);
    if (w <= 0) break;
    p += w;
    left -= static_cast<size_t>(w);
  }
  std::printf("%s %s %s\n", method.c_str(), path.c_str(), known ? "200" : "404");
  std::fflush(stdout);
}

}  // namespace

int main() {
  signal(SIGTERM, [](int) { _exit(0); });
  signal(SIGPIPE, SIG_IGN);
  const std::string mode = Env("DEMO_MODE", "myapp");
  const std::string ip = Env("POD_IP", "127.0.0.1");
  const int port = std::atoi(Env("PORT", "80").c_str());
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, ip.c_str(), &addr.sin_addr) != 1) {
    std::fprintf(stderr, "invalid POD_IP %s\n", ip.c_str());
    return 1;
  }
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd, 64) != 0) {
    std::fprintf(stderr, "cannot listen on %s:%d: %s\n", ip.c_str(), port, std::strerror(errno));
    return 1;
  }
  std::printf("%s listening on %s:%d\n", mode.c_str(), ip.c_str(), port);
  std::fflush(stdout);
  for (;;) {
    const int c = accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    Serve(c, mode);
    close(c);
  }
}
