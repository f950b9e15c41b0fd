// Symbolic dims: canonical arithmetic, their round trip through a model's dim_param, and the
// divisions shape formulas need.

#include <catch2/catch.hpp>

#include "inferopt/ir/symbolic_dim.hpp"

using namespace inferopt::ir;

namespace {
const sym_dim batch = sym_dim::named("batch");
const sym_dim sequence = sym_dim::named("sequence");
}  // namespace

TEST_CASE("sym_dim arithmetic comes out in one canonical spelling", "[ir][symbolic-dim]") {
  CHECK((batch * sequence).str() == "batch*sequence");
  CHECK((sequence * batch) == (batch * sequence));
  CHECK((sequence + sym_dim(1)).str() == "sequence+1");
  CHECK((sym_dim(2) * sequence).str() == "2*sequence");
  CHECK((sequence - sequence).constant() == 0);
  CHECK((batch * sym_dim(12) * sequence - batch * sequence * sym_dim(11)).str() == "batch*sequence");
  CHECK((sym_dim(0) - sequence).str() == "-sequence");
  CHECK((sym_dim(3) + sym_dim(4)).constant() == 7);
}

TEST_CASE("sym_dim divides exactly where the expression allows and names the rest", "[ir][symbolic-dim]") {
  CHECK(floor_div(sym_dim(768) * sequence, sym_dim(12)).str() == "64*sequence");
  CHECK(floor_div(batch * sequence * sym_dim(768), sym_dim(768) * sequence).str() == "batch");
  CHECK(floor_div(sym_dim(7), sym_dim(2)).constant() == 3);
  CHECK(floor_div(sym_dim(-7), sym_dim(2)).constant() == -4);
  CHECK(ceil_div(sym_dim(7), sym_dim(2)).constant() == 4);
  const sym_dim half = floor_div(sequence - sym_dim(1), sym_dim(2));
  CHECK(half.str() == "(sequence-1)/2");
  CHECK(half == floor_div(sequence - sym_dim(1), sym_dim(2)));
  CHECK_FALSE(floor_div(sequence, sym_dim(0)).known());
}

TEST_CASE("sym_dim reads back what it writes and keeps any other dim_param whole", "[ir][symbolic-dim]") {
  for (const sym_dim& d : {batch * sequence, sequence + sym_dim(1), sym_dim(2) * sequence - sym_dim(3),
                           floor_div(sequence - sym_dim(1), sym_dim(2)) + sym_dim(1)}) {
    CAPTURE(d.str());
    const dim written = d.to_dim();
    REQUIRE(written.is_symbolic());
    CHECK(sym_dim::from_dim(written) == d);
  }
  // Not our spelling: one opaque name, not arithmetic.
  CHECK(sym_dim::from_dim(dim("sequence + 1")) == sym_dim::named("sequence + 1"));
  CHECK(sym_dim::from_dim(dim("1+sequence")) == sym_dim::named("1+sequence"));
  CHECK(sym_dim::from_dim(dim(std::int64_t{5})).constant() == 5);
  CHECK_FALSE(sym_dim::from_dim(dim()).known());
}

TEST_CASE("an unknown sym_dim spreads through arithmetic and equals nothing", "[ir][symbolic-dim]") {
  const sym_dim unknown;
  CHECK_FALSE((unknown + sym_dim(1)).known());
  CHECK_FALSE((batch * unknown).known());
  CHECK_FALSE(unknown == unknown);
  CHECK(unknown.str() == "?");
  CHECK_FALSE(unknown.to_dim().is_static());
  CHECK_FALSE(unknown.to_dim().is_symbolic());
}

TEST_CASE("sym_dim substitutes numbers for names", "[ir][symbolic-dim]") {
  const std::map<std::string, std::int64_t, std::less<>> values{{"batch", 8}, {"sequence", 128}};
  CHECK((batch * sequence + sym_dim(1)).substitute(values).constant() == 1025);
  CHECK((batch * sym_dim::named("heads")).substitute(values).str() == "8*heads");
}

TEST_CASE("sym_dim knows a dim is never negative", "[ir][symbolic-dim]") {
  CHECK((batch * sequence).non_negative());
  CHECK((sequence + sym_dim(1)).non_negative());
  CHECK_FALSE((sequence - sym_dim(1)).non_negative());
  CHECK_FALSE(sym_dim().non_negative());
}

TEST_CASE("sym_dim gives up on expressions no real shape has, so hostile graphs stay cheap", "[ir][symbolic-dim]") {
  sym_dim grown = batch;
  for (int i = 0; i < 100; ++i) grown = grown * batch;
  CHECK_FALSE(grown.known());
  sym_dim wide(0);
  for (int i = 0; i < 100; ++i) wide = wide + sym_dim::named("d" + std::to_string(i));
  CHECK_FALSE(wide.known());
}
