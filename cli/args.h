#pragma once

#include <chrono>
#include <string>

#include "absl/status/statusor.h"
#include "api/taint_spec.h"

namespace CLI {
class App;
}

namespace mkube::cli {

using api::ParseTaint;
using api::TaintSpec;

// A duration flag as kubectl takes it: "30s", "2m", "1h", a bare number of seconds, or 0.
absl::StatusOr<std::chrono::seconds> ParseDuration(const std::string& text,
                                                   const std::string& flag);

// Parses a command line as kubectl reads it: the words after the first "--" belong to the
// command (a container's command and its arguments) and are never taken for flags, whatever
// option stands before the "--". CLI11 parses the words before it; those after it join the
// positional words of the command the line selected (the last positional that takes several),
// after the ones given before the "--". A command without such a positional refuses them.
// Throws CLI11's errors, as CLI::App::parse does.
void ParseCommandLine(CLI::App& app, int argc, const char* const* argv);

}  // namespace mkube::cli
