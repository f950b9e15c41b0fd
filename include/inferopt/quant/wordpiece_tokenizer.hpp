#pragma once
/// A WordPiece tokenizer read from a Hugging Face `tokenizer.json` (the format BERT, MiniLM and
/// the sentence-transformers encoders ship): BertNormalizer, BertPreTokenizer, WordPiece, the
/// [CLS] ... [SEP] post-processor (TemplateProcessing or BertProcessing), added tokens matched
/// in the raw text, truncation and padding to a fixed length. It turns calibration sentences
/// into the `input_ids`, `attention_mask` and `token_type_ids` a text encoder takes, token for
/// token what the `tokenizers` package gives (tested on a few hundred sentences).
/// Other tokenizer families (BPE, Unigram, other normalizers) are refused by name. Words
/// longer than max_input_chars_per_word, capped at 1000 characters, become [UNK].

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace inferopt::quant {

struct encoding {
  std::vector<std::int64_t> ids;
  std::vector<std::int64_t> attention_mask;  ///< 1 for tokens, 0 for padding
  std::vector<std::int64_t> type_ids;        ///< token_type_ids: 0 for one sentence
};

class wordpiece_tokenizer {
 public:
  /// Parses a tokenizer.json; throws errc::invalid_model naming what is missing or unsupported.
  [[nodiscard]] static wordpiece_tokenizer from_json(std::string_view json);
  [[nodiscard]] static wordpiece_tokenizer from_file(const std::string& path);

  /// One sentence: special tokens added, truncated to `length` tokens in all, then padded to
  /// exactly `length` (length 0: no truncation, no padding).
  [[nodiscard]] encoding encode(std::string_view text, std::size_t length) const;

  /// Pads `e` with the file's pad token (mask 0) to `length` tokens; longer ones are left as they are.
  void pad(encoding& e, std::size_t length) const;

  /// The length the file asks to truncate to (0: none).
  [[nodiscard]] std::size_t max_length() const noexcept { return max_length_; }

 private:
  wordpiece_tokenizer() = default;
  void word_pieces(const std::u32string& word, std::vector<std::int64_t>& out) const;
  void tokenize_segment(std::string_view text, std::vector<std::int64_t>& out) const;

  struct normalizer {
    bool clean_text = true, handle_chinese_chars = true, strip_accents = true, lowercase = true;
  } normalizer_;
  std::unordered_map<std::string, std::int64_t> vocab_;
  std::int64_t unk_id_ = 0;
  std::string prefix_ = "##";
  std::size_t max_chars_per_word_ = 100;
  std::vector<std::int64_t> before_, after_;  ///< special tokens around the sentence
  std::int64_t type_id_ = 0;                  ///< the sentence's type id in the template
  std::vector<std::pair<std::string, std::int64_t>> added_;  ///< longest first
  std::int64_t pad_id_ = 0, pad_type_id_ = 0;
  std::size_t max_length_ = 0;
};

}  // namespace inferopt::quant
