// wordpiece_tokenizer and text_calibration_batches on the committed fixture
// (tests/data/tokenizer, made by its script with the `tokenizers` package). The expected ids
// are what `tokenizers` gives for these sentences; tests/python/tokenizer_test.py compares the
// two on some 400 more.

#include "inferopt/quant/wordpiece_tokenizer.hpp"

#include <catch2/catch.hpp>

#include "inferopt/core/error.hpp"
#include "inferopt/ir/graph_builder.hpp"
#include "inferopt/quant/text_calibration.hpp"

using namespace inferopt;
using Catch::Matchers::Contains;

namespace {

const quant::wordpiece_tokenizer& fixture() {
  static const quant::wordpiece_tokenizer t =
      quant::wordpiece_tokenizer::from_file(INFEROPT_SOURCE_DIR "/tests/data/tokenizer/wordpiece_tokenizer.json");
  return t;
}

}  // namespace

TEST_CASE("wordpiece tokenizes as the tokenizers package does", "[quant][tokenizer]") {
  // [CLS] the quick brown fox jumps . [SEP]
  CHECK(fixture().encode("The quick brown fox jumps.", 0).ids == std::vector<std::int64_t>{2, 95, 147, 139, 227, 237, 13, 3});
  // Accents stripped and lowercased: cafe naive resume uber straße !
  CHECK(fixture().encode("Café NAÏVE résumé über straße!", 0).ids == std::vector<std::int64_t>{2, 214, 166, 211, 202, 190, 5, 3});
  // CJK split per character, [MASK] matched in the raw text, an unseen word in pieces.
  CHECK(fixture().encode("東京 [MASK] xyzzy", 0).ids == std::vector<std::int64_t>{2, 55, 51, 4, 46, 85, 67, 203, 3});
}

TEST_CASE("wordpiece truncates and pads to the length, keeping the special tokens", "[quant][tokenizer]") {
  const quant::encoding cut = fixture().encode("The quick brown fox jumps.", 6);
  CHECK(cut.ids == std::vector<std::int64_t>{2, 95, 147, 139, 227, 3});
  CHECK(cut.attention_mask == std::vector<std::int64_t>(6, 1));
  const quant::encoding padded = fixture().encode("fox", 5);
  CHECK(padded.ids == std::vector<std::int64_t>{2, 227, 3, 0, 0});
  CHECK(padded.attention_mask == std::vector<std::int64_t>{1, 1, 1, 0, 0});
  CHECK(padded.type_ids == std::vector<std::int64_t>(5, 0));
}

TEST_CASE("wordpiece refuses other tokenizer families and broken files by name", "[quant][tokenizer]") {
  REQUIRE_THROWS_WITH(quant::wordpiece_tokenizer::from_json("{not json"), Contains("not a JSON object"));
  REQUIRE_THROWS_WITH(quant::wordpiece_tokenizer::from_json(R"({"model": {"type": "BPE", "vocab": {}}})"),
                      Contains("model type 'BPE' is not WordPiece"));
  REQUIRE_THROWS_WITH(
      quant::wordpiece_tokenizer::from_json(R"({"model": {"type": "WordPiece", "vocab": {"[UNK]": 0}}, "pre_tokenizer": {"type": "Metaspace"}})"),
      Contains("pre_tokenizer 'Metaspace'"));
  REQUIRE_THROWS_WITH(quant::wordpiece_tokenizer::from_json(R"({"model": {"type": "WordPiece", "vocab": {"a": 0}}})"),
                      Contains("unk_token '[UNK]' is not in the vocabulary"));
  REQUIRE_THROWS_WITH(quant::wordpiece_tokenizer::from_json(R"({"model": {"type": "WordPiece", "vocab": [1, 2]}})"),
                      Contains("model.vocab is not an object"));
  REQUIRE_THROWS_WITH(quant::wordpiece_tokenizer::from_json(R"({"model": {"type": "WordPiece", "vocab": {"[UNK]": "zero"}}})"),
                      Contains("malformed"));
}

TEST_CASE("text batches fill ids, mask and token types by input name and type", "[quant][tokenizer]") {
  ir::model m = ir::make_model("encoder", 17);
  ir::graph_builder b(m.graph());
  ir::value* ids = b.input("input_ids", ir::data_type::int64, {ir::dim{2}, ir::dim{"sequence"}});
  ir::value* mask = b.input("attention_mask", ir::data_type::int32, {ir::dim{2}, ir::dim{"sequence"}});
  ir::value* types = b.input("token_type_ids", ir::data_type::int64, {ir::dim{2}, ir::dim{"sequence"}});
  b.output(b.op("Add", {ids, types}, {}, "sum"));
  b.output(b.op("Identity", {mask}, {}, "m"));
  const runtime::session s(m, runtime::session_options{.threads = 1});
  const std::vector<std::string> sentences{"the fox", "a lazy dog", "model"};
  const auto batches = quant::text_calibration_batches(s, sentences, fixture(), 8);
  REQUIRE(batches.size() == 2);  // two sentences per batch (static batch 2), the last one wrapping round
  const runtime::tensor& first = batches[0].at("input_ids");
  CHECK(first.shape() == runtime::shape_t{2, 8});
  CHECK(first.dtype() == ir::data_type::int64);
  CHECK(batches[0].at("attention_mask").dtype() == ir::data_type::int32);
  const auto first_ids = fixture().encode("the fox", 8).ids;
  CHECK(std::vector<std::int64_t>(first.data<std::int64_t>(), first.data<std::int64_t>() + 8) == first_ids);
  const runtime::tensor& wrapped = batches[1].at("input_ids");
  CHECK(std::vector<std::int64_t>(wrapped.data<std::int64_t>() + 8, wrapped.data<std::int64_t>() + 16) == first_ids);

  SECTION("without a length, a batch is as long as its longest sentence") {
    const auto own = quant::text_calibration_batches(s, sentences, fixture());
    const std::size_t fox = fixture().encode("the fox", 0).ids.size();
    const std::size_t dog = fixture().encode("a lazy dog", 0).ids.size();
    REQUIRE(dog > fox);
    const runtime::tensor& padded = own[0].at("input_ids");
    CHECK(padded.shape() == runtime::shape_t{2, static_cast<std::int64_t>(dog)});
    CHECK(std::vector<std::int64_t>(padded.data<std::int64_t>(), padded.data<std::int64_t>() + dog) ==
          fixture().encode("the fox", dog).ids);
    const runtime::tensor& mask_of_fox = own[0].at("attention_mask");
    CHECK(mask_of_fox.data<std::int32_t>()[fox - 1] == 1);
    CHECK(mask_of_fox.data<std::int32_t>()[fox] == 0);
  }

  SECTION("without a length or the tokenizer's, an over-long sentence is cut at 512 tokens, its [SEP] kept") {
    std::string words;
    for (int k = 0; k < 600; ++k) words += "fox ";
    const std::vector<std::string> long_one{words, "the fox"};
    const auto cut = quant::text_calibration_batches(s, long_one, fixture());
    const runtime::tensor& t = cut[0].at("input_ids");
    CHECK(t.shape() == runtime::shape_t{2, 512});
    CHECK(t.data<std::int64_t>()[511] == fixture().encode("fox", 0).ids.back());
  }

  SECTION("an input it cannot fill is named") {
    ir::model other = ir::make_model("image", 17);
    ir::graph_builder ob(other.graph());
    ob.output(ob.op("Identity", {ob.input("pixels", ir::data_type::float32, {ir::dim{1}, ir::dim{4}})}, {}, "i"));
    const runtime::session os(other, runtime::session_options{.threads = 1});
    REQUIRE_THROWS_WITH(quant::text_calibration_batches(os, sentences, fixture()), Contains("input 'pixels'"));
  }
}
