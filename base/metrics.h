#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

// Prometheus metrics: counters, gauges and histograms in labelled families, and values read
// when scraped, rendered in the text exposition format (0.0.4) that Prometheus and every
// client of it parse. Updates are lock-free once a labelled child is found.
namespace mkube::metrics {

using LabelValues = std::vector<std::string>;

class Counter {
 public:
  void Inc(double v = 1) { value_.fetch_add(v, std::memory_order_relaxed); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Add(double v) { value_.fetch_add(v, std::memory_order_relaxed); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Histogram {
 public:
  // `bounds`: the buckets' upper bounds, ascending (+Inf is implied).
  explicit Histogram(std::vector<double> bounds);
  void Observe(double v);
  // Cumulative counts per bound (and +Inf last), the sum and the count.
  void Read(std::vector<uint64_t>* cumulative, double* sum, uint64_t* count) const;
  const std::vector<double>& bounds() const { return bounds_; }

 private:
  const std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // per bucket, +Inf last
  std::atomic<double> sum_{0};
};

// Kubernetes' request-latency buckets, in seconds.
std::vector<double> LatencyBuckets();
// etcd's disk latency buckets (0.001 .. 8 s, doubling).
std::vector<double> ExponentialBuckets(double start, double factor, int count);

template <typename M>
class Family {
 public:
  Family(std::vector<std::string> label_names, std::function<std::unique_ptr<M>()> make)
      : label_names_(std::move(label_names)), make_(std::move(make)) {}
  // The child for these label values (as many as the family has label names), made on first
  // use. The reference stays valid as long as the registry.
  M& With(const LabelValues& values = {}) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock l(&mu_);
    auto& slot = children_[values];
    if (!slot) slot = make_();
    return *slot;
  }
  const std::vector<std::string>& label_names() const { return label_names_; }
  template <typename F>
  void ForEach(F f) const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock l(&mu_);
    for (const auto& [values, m] : children_) f(values, *m);
  }

 private:
  const std::vector<std::string> label_names_;
  const std::function<std::unique_ptr<M>()> make_;
  mutable absl::Mutex mu_;
  std::map<LabelValues, std::unique_ptr<M>> children_ ABSL_GUARDED_BY(mu_);
};

// One sample of a value read at scrape time.
struct Sample {
  LabelValues labels;
  double value = 0;
};

class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // The process's registry, with process_* metrics (CPU, resident memory, open files, start
  // time) read from /proc.
  static Registry& Default();

  // A second registration of a name returns the family made first.
  Family<Counter>& AddCounter(const std::string& name, const std::string& help,
                              std::vector<std::string> labels = {}) ABSL_LOCKS_EXCLUDED(mu_);
  Family<Gauge>& AddGauge(const std::string& name, const std::string& help,
                          std::vector<std::string> labels = {}) ABSL_LOCKS_EXCLUDED(mu_);
  Family<Histogram>& AddHistogram(const std::string& name, const std::string& help,
                                  std::vector<std::string> labels, std::vector<double> bounds)
      ABSL_LOCKS_EXCLUDED(mu_);
  // A gauge (or counter, `type` "counter") whose samples `read` gives at each scrape.
  void AddCallback(const std::string& name, const std::string& help, const std::string& type,
                   std::vector<std::string> labels, std::function<std::vector<Sample>()> read)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Every metric in the text exposition format, families sorted by name.
  std::string Render() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Entry {
    std::string help, type;
    std::unique_ptr<Family<Counter>> counter;
    std::unique_ptr<Family<Gauge>> gauge;
    std::unique_ptr<Family<Histogram>> histogram;
    std::vector<std::string> callback_labels;
    std::function<std::vector<Sample>()> callback;
  };
  mutable absl::Mutex mu_;
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
};

// The content type of Render's text.
inline constexpr char kTextContentType[] = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace mkube::metrics
