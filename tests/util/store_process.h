#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tests/util/process.h"

namespace mkube::testing {

// The real mkube-store binary on a free loopback port, with its data in data_dir.
class StoreProcess {
 public:
  StoreProcess(std::string data_dir, std::string log_path, std::vector<std::string> extra = {});
  ~StoreProcess();

  // A command the store runs under, e.g. {"/usr/bin/prlimit", "--nofile=64:64"}.
  void set_wrapper(std::vector<std::string> wrapper) { wrapper_ = std::move(wrapper); }
  absl::Status Start();
  // Ends it the hard way: SIGKILL, no chance to flush anything.
  void Kill9();
  // SIGTERM and wait for a clean exit; returns the exit status.
  int Stop();
  const std::string& address() const { return address_; }
  pid_t pid() const { return proc_ ? proc_->pid() : -1; }

 private:
  std::string data_dir_;
  std::string log_path_;
  std::vector<std::string> extra_;
  std::vector<std::string> wrapper_;
  std::unique_ptr<Subprocess> proc_;
  std::string address_;
};

// A real etcd (the peer) on a free loopback port, for the same tests and benchmarks.
class EtcdProcess {
 public:
  EtcdProcess(std::string data_dir, std::string log_path, std::vector<std::string> extra = {});
  ~EtcdProcess();
  absl::Status Start();
  void Kill9();
  const std::string& address() const { return address_; }

 private:
  std::string data_dir_;
  std::string log_path_;
  std::vector<std::string> extra_;
  std::unique_ptr<Subprocess> proc_;
  std::string address_;
};

}  // namespace mkube::testing
