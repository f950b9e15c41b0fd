#pragma once
// Which kernels a session ran, for tests that check a rewrite served (blocked layout, int8).

#include <algorithm>
#include <string>
#include <vector>

#include "inferopt/runtime/session.hpp"

namespace inferopt::test {

/// Op types a one-thread session ran on `feeds` (its profile's keys: "domain.Op" outside ai.onnx).
inline std::vector<std::string> ops_run(const ir::model& m, const runtime::tensor_map& feeds) {
  runtime::session s(m, runtime::session_options{.threads = 1});
  s.set_profiling(true);
  s.run(feeds);
  std::vector<std::string> ops;
  for (const auto& entry : s.profile()) ops.push_back(entry.first);
  return ops;
}

inline bool contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

}  // namespace inferopt::test
