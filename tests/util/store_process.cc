#include "tests/util/store_process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "tests/util/etcd_client.h"
#include "tests/util/eventually.h"

namespace mkube::testing {

StoreProcess::StoreProcess(std::string data_dir, std::string log_path,
                           std::vector<std::string> extra)
    : data_dir_(std::move(data_dir)), log_path_(std::move(log_path)), extra_(std::move(extra)) {}

StoreProcess::~StoreProcess() { Kill9(); }

absl::Status StoreProcess::Start() {
  const std::string addr_file = data_dir_ + ".addr";
  std::filesystem::remove(addr_file);
  std::vector<std::string> argv = wrapper_;
  argv.insert(argv.end(), {BinDir() + "/mkube-store", "--data-dir", data_dir_, "--listen",
                           "127.0.0.1:0", "--address-file", addr_file});
  argv.insert(argv.end(), extra_.begin(), extra_.end());
  proc_ = std::make_unique<Subprocess>(argv, log_path_);
  std::optional<std::string> line;
  bool exited = false;
  Eventually(
      [&] {
        line = FirstLine(addr_file);
        exited = !line && !proc_->Running();
        return line || exited;
      },
      std::chrono::seconds(30));
  if (line) {
    address_ = *line;
    return absl::OkStatus();
  }
  if (exited) {
    return absl::UnavailableError("mkube-store exited at start; log:\n" + ReadFile(log_path_));
  }
  return absl::UnavailableError("mkube-store did not start in 30 s; log:\n" + ReadFile(log_path_));
}

void StoreProcess::Kill9() {
  if (proc_) proc_->Kill();
}

int StoreProcess::Stop() {
  if (!proc_) return -1;
  proc_->Signal(SIGTERM);
  auto status = proc_->Wait(std::chrono::seconds(30));
  if (!status) {
    proc_->Kill();
    return -1;
  }
  return WIFEXITED(*status) ? WEXITSTATUS(*status) : -1;
}

EtcdProcess::EtcdProcess(std::string data_dir, std::string log_path,
                         std::vector<std::string> extra)
    : data_dir_(std::move(data_dir)), log_path_(std::move(log_path)), extra_(std::move(extra)) {}

EtcdProcess::~EtcdProcess() { Kill9(); }

absl::Status EtcdProcess::Start() {
  const int client = PickFreePort();
  const int peer = PickFreePort();
  address_ = "127.0.0.1:" + std::to_string(client);
  const std::string client_url = "http://" + address_;
  const std::string peer_url = "http://127.0.0.1:" + std::to_string(peer);
  std::vector<std::string> argv = {EtcdPath(),
                                   "--data-dir", data_dir_,
                                   "--listen-client-urls", client_url,
                                   "--advertise-client-urls", client_url,
                                   "--listen-peer-urls", peer_url,
                                   "--initial-advertise-peer-urls", peer_url,
                                   "--initial-cluster", "default=" + peer_url,
                                   "--log-level", "warn",
                                   "--logger", "zap"};
  argv.insert(argv.end(), extra_.begin(), extra_.end());
  proc_ = std::make_unique<Subprocess>(argv, log_path_);
  bool ready = false;
  Eventually(
      [&] {
        // A fresh channel each time: a refused first connection would otherwise back off.
        ready = EtcdClient(address_).Ready();
        return ready || !proc_->Running();
      },
      std::chrono::seconds(30));
  if (ready) return absl::OkStatus();
  return absl::UnavailableError("etcd did not start; log:\n" + ReadFile(log_path_));
}

void EtcdProcess::Kill9() {
  if (proc_) proc_->Kill();
}

}  // namespace mkube::testing
