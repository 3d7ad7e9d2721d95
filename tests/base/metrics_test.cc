// The Prometheus text exposition of counters, gauges, histograms and read-at-scrape values.
#include "base/metrics.h"

#include <gtest/gtest.h>

namespace mkube::metrics {
namespace {

TEST(Registry, RendersEveryKindInTheTextFormat) {
  Registry r;
  auto& requests = r.AddCounter("apiserver_request_total", "Requests.", {"verb", "code"});
  requests.With({"GET", "200"}).Inc();
  requests.With({"GET", "200"}).Inc(2);
  requests.With({"LIST", "404"}).Inc();
  r.AddGauge("workqueue_depth", "Depth.", {"name"}).With({"a\"b"}).Set(3.5);
  auto& h = r.AddHistogram("latency_seconds", "Latency.", {}, {0.1, 1});
  h.With().Observe(0.05);
  h.With().Observe(0.5);
  h.With().Observe(5);
  r.AddCallback("up", "Up.", "gauge", {}, [] { return std::vector<Sample>{{{}, 1}}; });
  // A second registration returns the first family.
  EXPECT_EQ(&r.AddCounter("apiserver_request_total", "x", {"verb", "code"}), &requests);
  const std::string text = r.Render();
  EXPECT_NE(text.find("# HELP apiserver_request_total Requests.\n# TYPE apiserver_request_total counter\n"),
            std::string::npos);
  EXPECT_NE(text.find("apiserver_request_total{verb=\"GET\",code=\"200\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("apiserver_request_total{verb=\"LIST\",code=\"404\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("workqueue_depth{name=\"a\\\"b\"} 3.5\n"), std::string::npos);
  EXPECT_NE(text.find("latency_seconds_bucket{le=\"0.1\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("latency_seconds_bucket{le=\"1\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("latency_seconds_bucket{le=\"+Inf\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("latency_seconds_count 3\n"), std::string::npos);
  EXPECT_NE(text.find("latency_seconds_sum 5.55\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE up gauge\nup 1\n"), std::string::npos);
}

TEST(Registry, TheProcessRegistryReadsProc) {
  const std::string text = Registry::Default().Render();
  EXPECT_NE(text.find("process_resident_memory_bytes "), std::string::npos);
  EXPECT_NE(text.find("process_cpu_seconds_total "), std::string::npos);
  EXPECT_NE(text.find("process_start_time_seconds "), std::string::npos);
}

}  // namespace
}  // namespace mkube::metrics
