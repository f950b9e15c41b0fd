// serve::prometheus_text: the exposition format's families, labels and cumulative buckets.
#include "inferopt/serve/prometheus.hpp"

#include <catch2/catch.hpp>

#include <array>

using namespace inferopt::serve;

TEST_CASE("prometheus text declares each family once and writes cumulative buckets", "[serve][metrics]") {
  histogram h;
  for (std::uint64_t v : {50, 150, 150, 900, 5000}) h.record(v);
  prometheus_text out;
  out.counter("inferopt_request_success", "Successful requests.", 3, "model=\"m\"");
  out.counter("inferopt_request_success", "Successful requests.", 4, "model=\"n\"");
  out.gauge("inferopt_pending_requests", "Requests queued now.", 2);
  const std::array<std::uint64_t, 3> bounds{100, 1000, 10000};
  out.histogram("inferopt_request_duration_us", "Request latency.", h, bounds, "model=\"m\"");
  const std::array<double, 2> quantiles{0.5, 0.99};
  out.summary("inferopt_request_latency_us", "Request latency percentiles.", h, quantiles);  // 150 is in [148, 151]
  CHECK(out.str() ==
        "# HELP inferopt_request_success Successful requests.\n"
        "# TYPE inferopt_request_success counter\n"
        "inferopt_request_success{model=\"m\"} 3\n"
        "inferopt_request_success{model=\"n\"} 4\n"
        "# HELP inferopt_pending_requests Requests queued now.\n"
        "# TYPE inferopt_pending_requests gauge\n"
        "inferopt_pending_requests 2\n"
        "# HELP inferopt_request_duration_us Request latency.\n"
        "# TYPE inferopt_request_duration_us histogram\n"
        "inferopt_request_duration_us_bucket{model=\"m\",le=\"100\"} 1\n"
        "inferopt_request_duration_us_bucket{model=\"m\",le=\"1000\"} 4\n"
        "inferopt_request_duration_us_bucket{model=\"m\",le=\"10000\"} 5\n"
        "inferopt_request_duration_us_bucket{model=\"m\",le=\"+Inf\"} 5\n"
        "inferopt_request_duration_us_sum{model=\"m\"} 6250\n"
        "inferopt_request_duration_us_count{model=\"m\"} 5\n"
        "# HELP inferopt_request_latency_us Request latency percentiles.\n"
        "# TYPE inferopt_request_latency_us summary\n"
        "inferopt_request_latency_us{quantile=\"0.5\"} 149.5\n"
        "inferopt_request_latency_us{quantile=\"0.99\"} 5000\n"
        "inferopt_request_latency_us_sum 6250\n"
        "inferopt_request_latency_us_count 5\n");
}
