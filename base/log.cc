#include "base/log.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "spdlog/spdlog.h"

namespace mkube::log {

spdlog::logger& Logger(const char* component) {
  // Held here as well as in spdlog's registry, so a reference handed out stays valid even if
  // the registry drops its loggers. The lock makes finding and creating one step: two threads
  // asking for a new name at once must not both register it (spdlog would throw).
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<spdlog::logger>, std::less<>> loggers;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = loggers.find(std::string_view(component)); it != loggers.end()) {
    return *it->second;
  }
  const std::string name(component);
  std::shared_ptr<spdlog::logger> logger = spdlog::get(name);
  if (!logger) {
    if (const std::shared_ptr<spdlog::logger> fallback = spdlog::default_logger()) {
      logger = std::make_shared<spdlog::logger>(name, fallback->sinks().begin(),
                                                fallback->sinks().end());
    } else {
      logger = std::make_shared<spdlog::logger>(name);  // no default logger: no sinks
    }
    // Takes the registry's pattern, level and flush level; registers unless automatic
    // registration was turned off.
    spdlog::initialize_logger(logger);
    if (!spdlog::get(name)) spdlog::register_logger(logger);
  }
  return *loggers.emplace(name, std::move(logger)).first->second;
}

void Setup(const std::string& process, spdlog::level::level_enum level) {
  std::string escaped;  // '%' starts a flag in spdlog's patterns
  for (char c : process) {
    if (c == '%') escaped += '%';
    escaped += c;
  }
  spdlog::set_level(level);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ " + escaped + " [%n] %v");
}

}  // namespace mkube::log
