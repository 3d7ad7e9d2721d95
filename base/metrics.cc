#include "base/metrics.h"

#include <dirent.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "absl/strings/str_split.h"
#include "fmt/format.h"

namespace mkube::metrics {
namespace {

std::string Value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

// Backslashes and newlines escaped, and double quotes too in label values (not in HELP text).
std::string Escape(const std::string& s, bool quotes = true) {
  std::string out;
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"' && quotes) {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

// {a="x",b="y"}, with `extra` (le="0.5") last; empty when there are no labels at all.
std::string LabelText(const std::vector<std::string>& names, const LabelValues& values,
                      const std::string& extra = "") {
  std::string out;
  for (size_t i = 0; i < names.size() && i < values.size(); ++i) {
    if (!out.empty()) out += ',';
    out += fmt::format("{}=\"{}\"", names[i], Escape(values[i]));
  }
  if (!extra.empty()) out += (out.empty() ? "" : ",") + extra;
  return out.empty() ? "" : "{" + out + "}";
}

// Fields of /proc/self/stat after the command (which may hold spaces): state is [0].
std::vector<std::string> ProcStat() {
  std::ifstream f("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return {};
  return absl::StrSplit(text.substr(close + 2), ' ', absl::SkipEmpty());
}

double BootTime() {
  std::ifstream f("/proc/stat");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("btime ", 0) == 0) return std::stod(line.substr(6));
  }
  return 0;
}

void AddProcessMetrics(Registry* r) {
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  r->AddCallback("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
                 "counter", {}, [ticks] {
                   auto f = ProcStat();
                   if (f.size() < 13) return std::vector<Sample>{};
                   return std::vector<Sample>{
                       {{}, (std::stod(f[11]) + std::stod(f[12])) / ticks}};
                 });
  r->AddCallback("process_resident_memory_bytes", "Resident memory size in bytes.", "gauge", {},
                 [page] {
                   auto f = ProcStat();
                   if (f.size() < 22) return std::vector<Sample>{};
                   return std::vector<Sample>{{{}, std::stod(f[21]) * page}};
                 });
  r->AddCallback("process_virtual_memory_bytes", "Virtual memory size in bytes.", "gauge", {}, [] {
    auto f = ProcStat();
    if (f.size() < 21) return std::vector<Sample>{};
    return std::vector<Sample>{{{}, std::stod(f[20])}};
  });
  r->AddCallback("process_start_time_seconds",
                 "Start time of the process since unix epoch in seconds.", "gauge", {}, [ticks] {
                   auto f = ProcStat();
                   if (f.size() < 20) return std::vector<Sample>{};
                   return std::vector<Sample>{{{}, BootTime() + std::stod(f[19]) / ticks}};
                 });
  r->AddCallback("process_open_fds", "Number of open file descriptors.", "gauge", {}, [] {
    double n = 0;
    if (DIR* d = opendir("/proc/self/fd")) {
      while (readdir(d)) ++n;
      closedir(d);
      n -= 3;  // ".", ".." and the directory's own
    }
    return std::vector<Sample>{{{}, n}};
  });
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)),
      counts_(std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1)) {}

void Histogram::Observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
}

void Histogram::Read(std::vector<uint64_t>* cumulative, double* sum, uint64_t* count) const {
  cumulative->clear();
  uint64_t total = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    total += counts_[i].load(std::memory_order_relaxed);
    cumulative->push_back(total);
  }
  *sum = sum_.load(std::memory_order_relaxed);
  *count = total;
}

std::vector<double> LatencyBuckets() {
  return {0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3,
          4,     5,     6,    8,   10,  15,  20,  30,  45,  60};
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  std::vector<double> out;
  for (int i = 0; i < count; ++i, start *= factor) out.push_back(start);
  return out;
}

Registry& Registry::Default() {
  static Registry* r = [] {
    auto* reg = new Registry();
    AddProcessMetrics(reg);
    return reg;
  }();
  return *r;
}

namespace {

// The family in `slot`, made on the first registration of its name.
template <typename M>
Family<M>& Register(std::unique_ptr<Family<M>>& slot, std::string* help, std::string* type,
                    const std::string& new_help, const char* new_type,
                    std::vector<std::string> labels, std::function<std::unique_ptr<M>()> make) {
  if (!slot) {
    *help = new_help;
    *type = new_type;
    slot = std::make_unique<Family<M>>(std::move(labels), std::move(make));
  }
  return *slot;
}

}  // namespace

Family<Counter>& Registry::AddCounter(const std::string& name, const std::string& help,
                                      std::vector<std::string> labels) {
  absl::MutexLock l(&mu_);
  Entry& e = entries_[name];
  return Register<Counter>(e.counter, &e.help, &e.type, help, "counter", std::move(labels),
                           [] { return std::make_unique<Counter>(); });
}

Family<Gauge>& Registry::AddGauge(const std::string& name, const std::string& help,
                                  std::vector<std::string> labels) {
  absl::MutexLock l(&mu_);
  Entry& e = entries_[name];
  return Register<Gauge>(e.gauge, &e.help, &e.type, help, "gauge", std::move(labels),
                         [] { return std::make_unique<Gauge>(); });
}

Family<Histogram>& Registry::AddHistogram(const std::string& name, const std::string& help,
                                          std::vector<std::string> labels,
                                          std::vector<double> bounds) {
  absl::MutexLock l(&mu_);
  Entry& e = entries_[name];
  return Register<Histogram>(e.histogram, &e.help, &e.type, help, "histogram", std::move(labels),
                             [bounds] { return std::make_unique<Histogram>(bounds); });
}

void Registry::AddCallback(const std::string& name, const std::string& help,
                           const std::string& type, std::vector<std::string> labels,
                           std::function<std::vector<Sample>()> read) {
  absl::MutexLock l(&mu_);
  Entry& e = entries_[name];
  e.help = help;
  e.type = type;
  e.callback_labels = std::move(labels);
  e.callback = std::move(read);
}

std::string Registry::Render() const {
  std::string out;
  absl::MutexLock l(&mu_);
  for (const auto& entry : entries_) {
    const std::string& name = entry.first;  // not a structured binding: lambdas capture it
    const Entry& e = entry.second;
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, Escape(e.help, false), name, e.type);
    // A counter's or a gauge's samples: one value per labelled child.
    auto values = [&](const auto& family) {
      family.ForEach([&](const LabelValues& v, const auto& m) {
        out += fmt::format("{}{} {}\n", name, LabelText(family.label_names(), v), Value(m.Value()));
      });
    };
    if (e.counter) {
      values(*e.counter);
    } else if (e.gauge) {
      values(*e.gauge);
    } else if (e.histogram) {
      const auto& names = e.histogram->label_names();
      e.histogram->ForEach([&](const LabelValues& v, const Histogram& h) {
        std::vector<uint64_t> cum;
        double sum = 0;
        uint64_t count = 0;
        h.Read(&cum, &sum, &count);
        for (size_t i = 0; i < cum.size(); ++i) {
          const std::string le =
              i < h.bounds().size() ? Value(h.bounds()[i]) : std::string("+Inf");
          out += fmt::format("{}_bucket{} {}\n", name,
                             LabelText(names, v, fmt::format("le=\"{}\"", le)), cum[i]);
        }
        out += fmt::format("{}_sum{} {}\n", name, LabelText(names, v), Value(sum));
        out += fmt::format("{}_count{} {}\n", name, LabelText(names, v), count);
      });
    } else if (e.callback) {
      for (const Sample& s : e.callback()) {
        out += fmt::format("{}{} {}\n", name, LabelText(e.callback_labels, s.labels),
                           Value(s.value));
      }
    }
  }
  return out;
}

}  // namespace mkube::metrics
