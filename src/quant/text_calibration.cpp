#include "inferopt/quant/text_calibration.hpp"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "inferopt/core/error.hpp"

namespace inferopt::quant {

namespace {

/// The truncation where neither the model, the caller nor the tokenizer gives one: BERT's positions.
constexpr std::size_t unbounded_sentence_tokens = 512;

enum class text_field { ids, mask, types };

bool contains(std::string_view name, std::string_view part) { return name.find(part) != std::string_view::npos; }

text_field field_of(const runtime::io_info& input) {
  const std::string& n = input.name;
  if (contains(n, "mask")) return text_field::mask;
  if (contains(n, "type") || contains(n, "segment")) return text_field::types;
  if (contains(n, "ids") || contains(n, "input")) return text_field::ids;
  throw error(errc::invalid_argument, "input '" + n + "' is not input_ids, attention_mask or token_type_ids: cannot fill it from text");
}

/// Static dims of [batch, sequence], or 0 where symbolic.
std::pair<std::int64_t, std::int64_t> batch_and_length(const runtime::io_info& input) {
  if (input.shape.size() != 2) {
    throw error(errc::invalid_argument, "input '" + input.name + "' must be [batch, sequence] to take token ids");
  }
  auto value = [](const ir::dim& d) { return d.is_static() ? d.value() : std::int64_t{0}; };
  return {value(input.shape[0]), value(input.shape[1])};
}

runtime::tensor integer_tensor(ir::data_type type, std::int64_t batch, std::int64_t length, const std::vector<std::int64_t>& values) {
  if (type == ir::data_type::int32) {
    return runtime::tensor::from_values<std::int32_t>({batch, length}, std::vector<std::int32_t>(values.begin(), values.end()));
  }
  if (type != ir::data_type::int64) throw error(errc::invalid_argument, "token inputs must be int64 or int32");
  return runtime::tensor::from_values<std::int64_t>({batch, length}, values);
}

/// The inputs of one batch: every row padded to `seq` tokens, each field in its input's type.
runtime::tensor_map batch_feeds(const runtime::session& s, const wordpiece_tokenizer& tokenizer, std::vector<encoding>& rows,
                                std::size_t seq) {
  std::vector<std::int64_t> ids, mask, types;
  for (encoding& e : rows) {
    tokenizer.pad(e, seq);
    ids.insert(ids.end(), e.ids.begin(), e.ids.end());
    mask.insert(mask.end(), e.attention_mask.begin(), e.attention_mask.end());
    types.insert(types.end(), e.type_ids.begin(), e.type_ids.end());
  }
  const auto batch = static_cast<std::int64_t>(rows.size());
  const auto length = static_cast<std::int64_t>(seq);
  runtime::tensor_map feeds;
  for (const runtime::io_info& input : s.inputs()) {
    const text_field f = field_of(input);
    feeds[input.name] = integer_tensor(input.type, batch, length, f == text_field::ids ? ids : (f == text_field::mask ? mask : types));
  }
  return feeds;
}

}  // namespace

std::vector<runtime::tensor_map> text_calibration_batches(const runtime::session& s, std::span<const std::string> sentences,
                                                         const wordpiece_tokenizer& tokenizer, std::size_t length) {
  if (sentences.empty()) throw error(errc::invalid_argument, "no sentences to calibrate on");
  std::int64_t batch = 1, static_length = 0;
  for (const runtime::io_info& input : s.inputs()) {
    (void)field_of(input);
    const auto [b, l] = batch_and_length(input);
    if (b > 0) batch = b;
    if (l > 0) static_length = l;
  }
  // A fixed length pads every sentence to it; otherwise a batch is as long as its longest
  // sentence, as at inference, so that padding does not swamp the ranges.
  const std::size_t fixed = static_length > 0 ? static_cast<std::size_t>(static_length) : length;
  const std::size_t longest = fixed > 0 ? fixed : (tokenizer.max_length() > 0 ? tokenizer.max_length() : unbounded_sentence_tokens);
  std::vector<runtime::tensor_map> batches;
  for (std::size_t first = 0; first < sentences.size(); first += static_cast<std::size_t>(batch)) {
    std::vector<encoding> rows;
    std::size_t seq = fixed;
    for (std::int64_t k = 0; k < batch; ++k) {  // a static batch is filled round the list
      const std::string& sentence = sentences[(first + static_cast<std::size_t>(k)) % sentences.size()];
      rows.push_back(tokenizer.encode(sentence, fixed));
      if (rows.back().ids.size() > longest) rows.back() = tokenizer.encode(sentence, longest);  // truncated
      seq = std::max(seq, rows.back().ids.size());
    }
    batches.push_back(batch_feeds(s, tokenizer, rows, seq));
  }
  return batches;
}

std::vector<std::string> read_sentences(std::istream& in, std::size_t limit) {
  std::vector<std::string> lines;
  for (std::string line; lines.size() < limit && std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) lines.push_back(std::move(line));
  }
  return lines;
}

std::vector<std::string> read_sentences(const std::string& path, std::size_t limit) {
  constexpr std::uintmax_t max_bytes = std::uintmax_t{256} << 20;  // far beyond any calibration set
  std::error_code ec;
  if (const std::uintmax_t size = std::filesystem::file_size(path, ec); !ec && size > max_bytes) {
    throw error(errc::invalid_argument, path + ": " + std::to_string(size >> 20) + " MB of text, more than the 256 MB a calibration set may have");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw error(errc::io, path + ": cannot read");
  return read_sentences(in, limit);
}

}  // namespace inferopt::quant
