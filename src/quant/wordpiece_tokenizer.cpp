#include "inferopt/quant/wordpiece_tokenizer.hpp"

#include <algorithm>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "bert_text.hpp"
#include "inferopt/core/error.hpp"

namespace inferopt::quant {

namespace {

using json = nlohmann::json;

[[noreturn]] void refuse(const std::string& what) { throw error(errc::invalid_model, "tokenizer.json: " + what); }

std::string type_of(const json& j, const char* part) {
  if (!j.contains(part) || j[part].is_null()) return "";
  if (!j[part].is_object() || !j[part].contains("type") || !j[part]["type"].is_string()) refuse(std::string(part) + " has no type");
  return j[part]["type"].get<std::string>();
}

/// The ids of a post-processor's special token: TemplateProcessing's `special_tokens` entry.
std::vector<std::int64_t> template_ids(const json& processor, const std::string& id) {
  const json& specials = processor.value("special_tokens", json::object());
  if (!specials.contains(id) || !specials[id].contains("ids")) refuse("post_processor names special token '" + id + "' without ids");
  return specials[id]["ids"].get<std::vector<std::int64_t>>();
}

}  // namespace

wordpiece_tokenizer wordpiece_tokenizer::from_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw error(errc::io, path + ": cannot read");
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  return from_json(text);
}

wordpiece_tokenizer wordpiece_tokenizer::from_json(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) refuse("not a JSON object");
  wordpiece_tokenizer t;
  try {
    if (type_of(j, "model") != "WordPiece") refuse("model type '" + type_of(j, "model") + "' is not WordPiece");
    const json& model = j["model"];
    if (!model.contains("vocab") || !model["vocab"].is_object()) refuse("model.vocab is not an object of token: id");
    for (const auto& [piece, id] : model["vocab"].items()) t.vocab_[piece] = id.get<std::int64_t>();
    const std::string unk = model.value("unk_token", "[UNK]");
    if (!t.vocab_.count(unk)) refuse("unk_token '" + unk + "' is not in the vocabulary");
    t.unk_id_ = t.vocab_.at(unk);
    t.prefix_ = model.value("continuing_subword_prefix", "##");
    // Capped: the longest-match search is quadratic in a word's length, and the file is input.
    t.max_chars_per_word_ = std::min(model.value("max_input_chars_per_word", std::size_t{100}), std::size_t{1000});

    const std::string normalizer = type_of(j, "normalizer");
    if (normalizer == "BertNormalizer") {
      const json& n = j["normalizer"];
      t.normalizer_.clean_text = n.value("clean_text", true);
      t.normalizer_.handle_chinese_chars = n.value("handle_chinese_chars", true);
      t.normalizer_.lowercase = n.value("lowercase", true);
      t.normalizer_.strip_accents = n.contains("strip_accents") && !n["strip_accents"].is_null() ? n["strip_accents"].get<bool>()
                                                                                                : t.normalizer_.lowercase;
    } else if (!normalizer.empty()) {
      refuse("normalizer '" + normalizer + "' is not supported (BertNormalizer is)");
    }
    if (const std::string pre = type_of(j, "pre_tokenizer"); pre != "BertPreTokenizer") {
      refuse("pre_tokenizer '" + pre + "' is not supported (BertPreTokenizer is)");
    }

    const std::string post = type_of(j, "post_processor");
    if (post == "TemplateProcessing") {
      bool seen_sequence = false;
      for (const json& piece : j["post_processor"].at("single")) {
        if (piece.contains("Sequence")) {
          seen_sequence = true;
          t.type_id_ = piece["Sequence"].value("type_id", 0);
        } else if (piece.contains("SpecialToken")) {
          const auto ids = template_ids(j["post_processor"], piece["SpecialToken"].at("id").get<std::string>());
          (seen_sequence ? t.after_ : t.before_).insert((seen_sequence ? t.after_ : t.before_).end(), ids.begin(), ids.end());
        }
      }
    } else if (post == "BertProcessing") {
      t.before_ = {j["post_processor"].at("cls").at(1).get<std::int64_t>()};
      t.after_ = {j["post_processor"].at("sep").at(1).get<std::int64_t>()};
    } else if (!post.empty()) {
      refuse("post_processor '" + post + "' is not supported (TemplateProcessing, BertProcessing are)");
    }

    for (const json& added : j.value("added_tokens", json::array())) {
      t.added_.emplace_back(added.at("content").get<std::string>(), added.at("id").get<std::int64_t>());
    }
    std::sort(t.added_.begin(), t.added_.end(), [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
    if (j.contains("padding") && j["padding"].is_object()) {
      t.pad_id_ = j["padding"].value("pad_id", std::int64_t{0});
      t.pad_type_id_ = j["padding"].value("pad_type_id", std::int64_t{0});
    } else if (const auto pad = t.vocab_.find("[PAD]"); pad != t.vocab_.end()) {
      t.pad_id_ = pad->second;
    }
    if (j.contains("truncation") && j["truncation"].is_object()) t.max_length_ = j["truncation"].value("max_length", std::size_t{0});
  } catch (const json::exception& e) {
    refuse(std::string("malformed: ") + e.what());
  }
  return t;
}

/// Greedy longest-match-first over the vocabulary; a word with no split, or longer than
/// max_input_chars_per_word, becomes one unknown token.
void wordpiece_tokenizer::word_pieces(const std::u32string& word, std::vector<std::int64_t>& out) const {
  if (word.size() > max_chars_per_word_) {
    out.push_back(unk_id_);
    return;
  }
  std::vector<std::int64_t> pieces;
  for (std::size_t start = 0; start < word.size();) {
    std::size_t end = word.size();
    std::int64_t found = -1;
    for (; end > start; --end) {
      const std::string piece = (start > 0 ? prefix_ : std::string()) + bert_text::encode_utf8(word.substr(start, end - start));
      if (const auto it = vocab_.find(piece); it != vocab_.end()) {
        found = it->second;
        break;
      }
    }
    if (found < 0) {
      out.push_back(unk_id_);
      return;
    }
    pieces.push_back(found);
    start = end;
  }
  out.insert(out.end(), pieces.begin(), pieces.end());
}

void wordpiece_tokenizer::tokenize_segment(std::string_view text, std::vector<std::int64_t>& out) const {
  const bert_text::normalizer_options options{normalizer_.clean_text, normalizer_.handle_chinese_chars,
                                              normalizer_.strip_accents, normalizer_.lowercase};
  for (const std::u32string& word : bert_text::pre_tokenize(bert_text::normalize(bert_text::decode_utf8(text), options))) {
    word_pieces(word, out);
  }
}

encoding wordpiece_tokenizer::encode(std::string_view text, std::size_t length) const {
  // Added tokens ([MASK], ...) are found in the raw text first; the rest is tokenized between them.
  std::vector<std::int64_t> ids;
  std::size_t segment = 0;
  for (std::size_t i = 0; i < text.size();) {
    const auto hit = std::find_if(added_.begin(), added_.end(), [&](const auto& a) { return !a.first.empty() && text.substr(i).starts_with(a.first); });
    if (hit == added_.end()) {
      ++i;
      continue;
    }
    tokenize_segment(text.substr(segment, i - segment), ids);
    ids.push_back(hit->second);
    i += hit->first.size();
    segment = i;
  }
  tokenize_segment(text.substr(segment), ids);

  const std::size_t specials = before_.size() + after_.size();
  if (length > 0 && ids.size() + specials > length) ids.resize(length > specials ? length - specials : 0);
  encoding e;
  e.ids = before_;
  e.ids.insert(e.ids.end(), ids.begin(), ids.end());
  e.ids.insert(e.ids.end(), after_.begin(), after_.end());
  e.attention_mask.assign(e.ids.size(), 1);
  e.type_ids.assign(e.ids.size(), type_id_);
  pad(e, length);
  return e;
}

void wordpiece_tokenizer::pad(encoding& e, std::size_t length) const {
  if (length <= e.ids.size()) return;
  const std::size_t count = length - e.ids.size();
  e.ids.insert(e.ids.end(), count, pad_id_);
  e.attention_mask.insert(e.attention_mask.end(), count, 0);
  e.type_ids.insert(e.type_ids.end(), count, pad_type_id_);
}

}  // namespace inferopt::quant
