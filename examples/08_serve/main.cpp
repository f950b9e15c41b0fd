// The serve module's pieces so far (issue 21 builds the batcher and server on them): the
// default model behind a response cache, with request latencies in a histogram, exposed as
// Prometheus text. 200 requests drawn from 20 distinct inputs: the first of each computes,
// the rest hit the cache; every hit is checked against a fresh run.

#include <chrono>
#include <iostream>
#include <vector>

#include "inferopt/inferopt.hpp"

int main() {
  using namespace inferopt;
  using clock = std::chrono::steady_clock;
  try {
    runtime::session session(ir::make_default_model(), runtime::session_options{.threads = 1});
    serve::response_cache cache(serve::response_cache_options{.capacity_bytes = std::size_t{4} << 20});
    serve::histogram computed_us, cached_us;
    std::vector<runtime::tensor_map> distinct;
    for (std::uint64_t seed = 0; seed < 20; ++seed) distinct.push_back(runtime::random_inputs(session, seed));
    int mismatches = 0;
    for (int i = 0; i < 200; ++i) {
      const runtime::tensor_map& inputs = distinct[static_cast<std::size_t>(i * 7 % 20)];
      const auto start = clock::now();
      const serve::request_key key("default", inputs);
      std::optional<runtime::tensor_map> outputs = cache.find(key);
      const bool hit = outputs.has_value();
      if (!hit) {
        outputs = session.run(inputs);
        cache.insert(key, *outputs);
      }
      const auto us = std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - start).count();
      (hit ? cached_us : computed_us).record(static_cast<std::uint64_t>(us));
      if (hit) {
        const runtime::tensor_map fresh = session.run(inputs);
        for (const auto& [name, t] : fresh) mismatches += t.to_float() != outputs->at(name).to_float();
      }
    }
    const serve::response_cache_stats s = cache.stats();
    std::cout << "cache: " << s.hits << " hits, " << s.misses << " misses, " << s.entries << " entries, " << s.bytes
              << " bytes; " << mismatches << " hits differ from a fresh run\n"
              << "latency P50: computed " << computed_us.percentile(0.5) << " us, cached " << cached_us.percentile(0.5) << " us\n";
    serve::prometheus_text metrics;
    metrics.counter("inferopt_cache_hits", "Requests answered from the response cache.", s.hits);
    metrics.counter("inferopt_cache_misses", "Requests the model computed.", s.misses);
    const std::vector<double> quantiles{0.5, 0.9, 0.99};
    metrics.summary("inferopt_request_latency_us", "Request latency in microseconds.", computed_us, quantiles, "cached=\"false\"");
    metrics.summary("inferopt_request_latency_us", "Request latency in microseconds.", cached_us, quantiles, "cached=\"true\"");
    std::cout << metrics.str();
    return s.hits == 180 && s.misses == 20 && mismatches == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
