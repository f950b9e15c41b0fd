#include "inferopt/pass/instrumentation.hpp"

#include <ostream>

#include "inferopt/ir/printer.hpp"
#include "inferopt/ir/verify.hpp"

namespace inferopt {

void verify_each::after_pass(const pass& p, const ir::model& m, const pass_outcome& outcome) {
  (void)p;
  (void)outcome;
  auto problems = ir::find_problems(m.graph());
  if (!problems.empty()) {
    throw error(errc::verification, "left a broken graph: " + problems.front());
  }
}

void print_after_change::after_pass(const pass& p, const ir::model& m, const pass_outcome& outcome) {
  if (!outcome.changed) return;
  out_ << "// ----- after " << p.name() << " (" << outcome.rewrites << " rewrites) -----\n"
       << ir::to_text(m.graph());
}

}  // namespace inferopt
