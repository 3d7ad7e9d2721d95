#include "tests/util/test_pki.h"

#include <filesystem>
#include <fstream>
#include <vector>

#include "absl/strings/str_join.h"
#include "tests/util/process.h"

namespace mkube::testing {
namespace {

absl::Status Openssl(const std::string& dir, std::vector<std::string> args) {
  args.insert(args.begin(), "openssl");
  std::vector<std::string> argv = {"sh", "-c", "cd \"$0\" && exec \"$@\"", dir};
  argv.insert(argv.end(), args.begin(), args.end());
  const CommandResult r = RunCommand(argv);
  if (r.exit_code != 0) {
    return absl::InternalError(absl::StrJoin(args, " ") + " failed: " + r.err);
  }
  return absl::OkStatus();
}

absl::Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  return out.flush() ? absl::OkStatus() : absl::InternalError("cannot write " + path);
}

// NAME.crt and NAME.key, signed by CA.crt/CA.key, with the extensions given.
absl::Status Issue(const std::string& dir, const std::string& name, const std::string& ca,
                   const std::string& extensions) {
  if (auto st = WriteFile(dir + "/" + name + ".ext", extensions); !st.ok()) return st;
  if (auto st = Openssl(
          dir, {"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", name + ".key", "-out", name + ".csr", "-subj", "/CN=" + name});
      !st.ok()) {
    return st;
  }
  return Openssl(
      dir, {"x509", "-req", "-in", name + ".csr", "-CA", ca + ".crt", "-CAkey", ca + ".key",
            "-CAcreateserial", "-out", name + ".crt", "-days", "2", "-extfile", name + ".ext"});
}

absl::Status MakeCa(const std::string& dir, const std::string& name) {
  return Openssl(
      dir, {"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", name + ".key", "-out", name + ".crt", "-days", "2", "-subj", "/CN=" + name});
}

}  // namespace

absl::StatusOr<TestPki> MakeTestPki(const std::string& dir) {
  std::filesystem::create_directories(dir);
  for (const char* ca : {"ca", "other-ca"}) {
    if (auto st = MakeCa(dir, ca); !st.ok()) return st;
  }
  const std::string client = "extendedKeyUsage = clientAuth\n";
  if (auto st = Issue(dir, "server", "ca",
                      "subjectAltName = IP:127.0.0.1, DNS:localhost\n"
                      "extendedKeyUsage = serverAuth\n");
      !st.ok()) {
    return st;
  }
  if (auto st = Issue(dir, "client", "ca", client); !st.ok()) return st;
  if (auto st = Issue(dir, "stranger", "other-ca", client); !st.ok()) return st;
  TestPki pki;
  pki.ca = dir + "/ca.crt";
  pki.server_cert = dir + "/server.crt";
  pki.server_key = dir + "/server.key";
  pki.client_cert = dir + "/client.crt";
  pki.client_key = dir + "/client.key";
  pki.stranger_cert = dir + "/stranger.crt";
  pki.stranger_key = dir + "/stranger.key";
  return pki;
}

}  // namespace mkube::testing
