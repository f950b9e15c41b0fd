#pragma once
// The text steps of a BERT tokenizer before WordPiece, as Hugging Face `tokenizers` defines
// them (BertNormalizer, BertPreTokenizer), on Unicode code points (utf8proc gives the
// categories and decompositions). Private to src/quant (wordpiece_tokenizer.cpp).
#include <string>
#include <string_view>
#include <vector>

namespace inferopt::quant::bert_text {

struct normalizer_options {
  bool clean_text = true;            ///< drop controls and U+FFFD, every whitespace becomes ' '
  bool handle_chinese_chars = true;  ///< CJK ideographs become words of their own
  bool strip_accents = true;         ///< NFD, then nonspacing marks dropped
  bool lowercase = true;
};

/// UTF-8 text to code points; an invalid byte becomes U+FFFD (which clean_text drops).
[[nodiscard]] std::u32string decode_utf8(std::string_view text);
/// Code points to UTF-8.
[[nodiscard]] std::string encode_utf8(std::u32string_view text);

/// BertNormalizer, in its order: clean text, pad CJK, strip accents, lowercase.
[[nodiscard]] std::u32string normalize(std::u32string_view text, const normalizer_options& options);

/// BertPreTokenizer: splits at whitespace (dropped) and around each punctuation character
/// (kept as a word of its own): ASCII punctuation and every Unicode P* category.
[[nodiscard]] std::vector<std::u32string> pre_tokenize(std::u32string_view text);

}  // namespace inferopt::quant::bert_text
