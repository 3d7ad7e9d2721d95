#pragma once

#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

// What every daemon's main does alike, the store's included.
namespace mkube::daemon {

std::string Hostname();

// Adds --log-level to `app`, checked against spdlog's level names; `level` holds the default.
void AddLogLevelOption(CLI::App& app, std::string* level);

// What a daemon does once its flags are parsed, before it starts a thread:
// - Abseil's lock-order checks off (Debian's Abseil otherwise checks the order on every
//   absl::Mutex acquisition, under one process-wide lock: a few percent of a busy daemon's CPU);
// - every logger names `process` ("store", "agent node01") and logs at `log_level` (a value
//   AddLogLevelOption checked);
// - SIGTERM and SIGINT blocked for this thread and every thread it starts later, for
//   WaitForTermination to take; SIGPIPE ignored.
void Setup(const std::string& process, const std::string& log_level);
// Returns the termination signal that came, once one has.
int WaitForTermination();

// As Go programs do (etcd among them): the soft limit on open files up to the hard one, so
// that connections and database files are not refused at the 1,024 most shells start with.
void RaiseOpenFileLimit();

// Writes `content` and a newline to `path` whole (WriteFileAtomically): the address or
// ready file a supervisor or a test waits for. Nothing when `path` is empty.
absl::Status WriteReadyFile(const std::string& path, const std::string& content);

// A duration flag ("15s", "1m30s") that must be positive; the error names the flag.
absl::StatusOr<absl::Duration> PositiveDuration(const std::string& flag, const std::string& text);

}  // namespace mkube::daemon
