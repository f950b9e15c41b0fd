// The trained digits CNN (tests/data/digits) pruned 30%: test accuracy before, after pruning
// without BatchNormalization recalibration, and after with it. Pruning the inputs of a conv
// shifts the statistics its BatchNormalization sees; recalibration must win that back.

#include <iostream>

#include <catch2/catch.hpp>

#include "digits_accuracy.hpp"
#include "inferopt/ir/serialize.hpp"
#include "inferopt/ir/verify.hpp"
#include "inferopt/prune/bn_recalibration.hpp"
#include "inferopt/prune/prune.hpp"

using namespace inferopt;

namespace {

struct accuracies {
  double before = 0, pruned = 0, recalibrated = 0;
  std::int64_t macs_before = 0, macs_after = 0;
};

accuracies prune_digits(prune::importance_criterion criterion, bool default_ignores) {
  ir::model m = ir::load_model(test::digits_dir() / "digits_cnn.onnx");
  accuracies a;
  a.before = test::digits_accuracy(m);
  prune::prune_options o;
  o.selection.ratio = 0.3;
  o.selection.round_to = 1;  // 16- and 32-channel layers: multiples of 8 would prune nothing or half
  o.importance.criterion = criterion;
  o.analysis.ignore_defaults = default_ignores;
  const prune::prune_summary s = prune::prune_model(m, o);
  REQUIRE(ir::find_problems(m.graph()).empty());
  a.macs_before = s.macs_before;
  a.macs_after = s.macs_after;
  a.pruned = test::digits_accuracy(m);
  const auto batches = test::digits_calibration_batches();
  const prune::bn_recalibration_result r = prune::recalibrate_batch_norm(m, batches);
  CHECK(r.layers == 4);
  a.recalibrated = test::digits_accuracy(ir::parse_model(ir::serialize_model(m)));
  std::cout << "digits CNN, 30% (" << to_string(criterion) << (default_ignores ? ", first conv and classifier kept" : ", every layer")
            << "): MACs " << a.macs_before << " -> " << a.macs_after << "; test accuracy " << 100 * a.before << "% -> "
            << 100 * a.pruned << "% without recalibration -> " << 100 * a.recalibrated << "% with\n";
  return a;
}

}  // namespace

TEST_CASE("recalibrating BatchNormalization after pruning the digits CNN beats not recalibrating", "[prune][digits]") {
  // l1 with the defaults is the acceptance configuration; bn (|gamma|) and pruning every layer
  // show the effect where pruning hurts more.
  for (bool default_ignores : {true, false}) {
    for (auto criterion : {prune::importance_criterion::l1, prune::importance_criterion::bn_scale}) {
      CAPTURE(default_ignores, to_string(criterion));
      const accuracies a = prune_digits(criterion, default_ignores);
      CHECK(a.before == Approx(0.984));
      CHECK(a.macs_after < a.macs_before);
      if (a.before - a.pruned > 0.01) {
        CHECK(a.recalibrated > a.pruned);  // something was lost: recalibration wins part of it back
      } else {
        CHECK(a.recalibrated >= a.pruned - 0.005);  // nearly nothing lost: it must not cost more than 2 images
      }
    }
  }
}
