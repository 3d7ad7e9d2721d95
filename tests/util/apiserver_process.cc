#include "tests/util/apiserver_process.h"

#include <filesystem>
#include <fstream>

namespace mkube::testing {

absl::Status ApiServerProcess::Start() {
  const std::string addr_file = dir_ + "/apiserver.addr";
  std::filesystem::remove(addr_file);
  std::ofstream(dir_ + "/tokens.csv") << kTokens;
  std::ofstream(agent_token_file()) << kAgentToken << "\n";
  std::vector<std::string> args = {BinDir() + "/mkube-apiserver", "--listen", listen,
                                   "--store-endpoints", store_,
                                   "--token-file", dir_ + "/tokens.csv",
                                   "--insecure-plaintext", "--watch-queue-events", "50",
                                   "--watch-cache-window-mib", "16",
                                   "--agent-token-file", agent_token_file(),
                                   "--address-file", addr_file};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  proc_ = std::make_unique<Subprocess>(args, dir_ + "/apiserver.log");
  auto line = WaitForFileLine(addr_file, std::chrono::seconds(30));
  if (!line) {
    return absl::UnavailableError("apiserver did not start:\n" + ReadFile(dir_ + "/apiserver.log"));
  }
  address_ = *line;
  return absl::OkStatus();
}

}  // namespace mkube::testing
