#include "cli/args.h"

#include <string_view>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "fmt/format.h"

namespace mkube::cli {

absl::StatusOr<std::chrono::seconds> ParseDuration(const std::string& text,
                                                   const std::string& flag) {
  if (text.empty() || text == "0") return std::chrono::seconds(0);
  size_t end = 0;
  while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
  int64_t n = -1;
  if (end == 0 || end > 12 || !absl::SimpleAtoi(text.substr(0, end), &n)) n = -1;
  const std::string unit = text.substr(end);
  if (n >= 0 && (unit.empty() || unit == "s")) return std::chrono::seconds(n);
  if (n >= 0 && unit == "m") return std::chrono::seconds(n * 60);
  if (n >= 0 && unit == "h") return std::chrono::seconds(n * 3600);
  return absl::InvalidArgumentError(fmt::format(
      "invalid argument \"{}\" for \"{}\" flag: time: invalid duration \"{}\"", text, flag, text));
}

void ParseCommandLine(CLI::App& app, int argc, const char* const* argv) {
  int dash = 1;
  while (dash < argc && std::string_view(argv[dash]) != "--") ++dash;
  // CLI11 would let an option that takes several values (--labels, --env) eat the "--" and
  // then read the command's own words ("-c") as flags: it never sees them.
  app.parse(dash, argv);
  if (dash + 1 >= argc) return;
  const std::vector<std::string> after(argv + dash + 1, argv + argc);
  CLI::App* selected = &app;
  for (auto subs = app.get_subcommands(); !subs.empty(); subs = selected->get_subcommands()) {
    selected = subs.front();
  }
  CLI::Option* words = nullptr;
  for (CLI::Option* opt : selected->get_options()) {
    if (opt->get_positional() && opt->get_items_expected_max() > 1) words = opt;
  }
  if (words == nullptr) {
    throw CLI::ExtrasError(std::vector<std::string>(after.rbegin(), after.rend()));
  }
  words->add_result(after);
  words->run_callback();  // the bound vector gets every word, those before the "--" first
}

}  // namespace mkube::cli
