#pragma once
/// Calibration batches for a text encoder from sentences: each sentence tokenized
/// (wordpiece_tokenizer.hpp) and padded to the model's sequence length (where it is symbolic,
/// to a given length, else to the longest sentence of the batch), the ids, mask and
/// token types put in the inputs named for them (`input_ids`, `attention_mask`,
/// `token_type_ids`, as Hugging Face exports name them, or a name containing `ids`, `mask`,
/// `type`/`segment`), in each input's integer type. A batch holds as many sentences as the
/// model's batch dim when it is static, else one.

#include <cstddef>
#include <cstdint>
#include <istream>
#include <span>
#include <string>
#include <vector>

#include "inferopt/quant/wordpiece_tokenizer.hpp"
#include "inferopt/runtime/session.hpp"

namespace inferopt::quant {

/// `length` is used where the sequence dim is symbolic; 0 makes each batch as long as its
/// longest sentence, truncated to the tokenizer's max_length (else 512). Throws
/// errc::invalid_argument for an input it cannot fill (naming it) or no sentences.
[[nodiscard]] std::vector<runtime::tensor_map> text_calibration_batches(const runtime::session& s,
                                                                       std::span<const std::string> sentences,
                                                                       const wordpiece_tokenizer& tokenizer,
                                                                       std::size_t length = 0);

/// The non-empty lines of UTF-8 text (a trailing '\r' dropped), at most `limit`; a file of
/// more than 256 MB is refused.
[[nodiscard]] std::vector<std::string> read_sentences(std::istream& in, std::size_t limit = SIZE_MAX);
[[nodiscard]] std::vector<std::string> read_sentences(const std::string& path, std::size_t limit = SIZE_MAX);

}  // namespace inferopt::quant
