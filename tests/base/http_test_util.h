#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <thread>

#include "base/http/server.h"
#include "tests/util/test_pki.h"

namespace mkube::http {

// What the HTTP tests share: certificates in a temporary folder, and a streamed answer of
// numbered lines.
class TempPki {
 public:
  TempPki() {
    char tmpl[] = "/tmp/mkube-http-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
    auto made = testing::MakeTestPki(dir_);
    ok_ = made.ok();
    if (ok_) pki_ = *made;
  }
  ~TempPki() { std::filesystem::remove_all(dir_); }
  bool ok() const { return ok_; }
  const testing::TestPki& operator*() const { return pki_; }
  const testing::TestPki* operator->() const { return &pki_; }

 private:
  std::string dir_;
  bool ok_ = false;
  testing::TestPki pki_;
};

// Lines {"n":0} to {"n":n-1}, one per line.
inline std::string NumberedLines(int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += "{\"n\":" + std::to_string(i) + "}\n";
  return out;
}

// Answers with NumberedLines(n), streamed a line at a time from another thread.
inline void StreamNumberedLines(const ExchangePtr& ex, int n) {
  ex->Start(200, "application/json");
  std::thread([ex, n] {
    for (int i = 0; i < n; ++i) ex->WriteWaiting("{\"n\":" + std::to_string(i) + "}\n");
    ex->End();
  }).detach();
}

}  // namespace mkube::http
