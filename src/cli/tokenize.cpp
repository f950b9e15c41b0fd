// `inferopt tokenize TOKENIZER.json [--text FILE] [--length N]`: what --calib-text feeds a
// text encoder, one JSON object a sentence ({"ids", "attention_mask", "type_ids"}), for
// checking a tokenizer.json before calibrating on it (and the test against `tokenizers`).
// Sentences come from FILE, or standard input, one per line.

#include <iostream>

#include "commands.hpp"
#include "inferopt/quant/text_calibration.hpp"
#include "inferopt/quant/wordpiece_tokenizer.hpp"

namespace inferopt::cli {
namespace {

struct tokenize_options {
  std::string tokenizer;
  std::string text;
  std::size_t length = 0;
};

int run_tokenize(const tokenize_options& o) {
  const quant::wordpiece_tokenizer tokenizer = quant::wordpiece_tokenizer::from_file(o.tokenizer);
  const std::vector<std::string> sentences = o.text.empty() ? quant::read_sentences(std::cin) : quant::read_sentences(o.text);
  for (const std::string& s : sentences) {
    const quant::encoding e = tokenizer.encode(s, o.length);
    std::cout << nlohmann::json{{"ids", e.ids}, {"attention_mask", e.attention_mask}, {"type_ids", e.type_ids}}.dump() << "\n";
  }
  return 0;
}

void declare_tokenize(CLI::App& sub, tokenize_options& o) {
  sub.add_option("tokenizer", o.tokenizer, "A WordPiece tokenizer.json (Hugging Face)")->required();
  sub.add_option("--text", o.text, "Sentences, one per line (default: standard input)");
  sub.add_option("--length", o.length, "Truncate and pad to this many tokens (default: neither)");
}

}  // namespace

command add_tokenize(CLI::App& app) {
  return make_command(app, "tokenize", "Tokenize sentences as --calib-text would (WordPiece tokenizer.json)", declare_tokenize,
                      run_tokenize);
}

}  // namespace inferopt::cli
