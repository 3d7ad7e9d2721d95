#pragma once

#include <string>

#include "spdlog/logger.h"

// Named loggers: one per component ("mvcc", "cache", "informer", ...), so each line says which
// part of which process wrote it.
namespace mkube::log {

// The component's logger, made on first use (from any thread) with the default logger's sinks
// and registered with spdlog, so spdlog::set_level and Setup apply to it. One name always gives
// the same logger, valid for the rest of the process. Finding it locks: look it up once per
// file, e.g. `spdlog::logger& Log() { static spdlog::logger& l = Logger("cache"); return l; }`.
spdlog::logger& Logger(const char* component);

// For a daemon's main: every logger at `level`, each line
//   2024-05-01T12:00:00.123 info <process> [<component>] <message>
// where `process` names the process ("store", "agent node01").
void Setup(const std::string& process, spdlog::level::level_enum level);

}  // namespace mkube::log
