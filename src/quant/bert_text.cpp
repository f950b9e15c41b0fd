// BertNormalizer and BertPreTokenizer over code points (bert_text.hpp). The character classes
// follow `tokenizers`' Rust definitions: whitespace is Unicode White_Space (char::is_whitespace),
// a control is any C* category but tab, newline and carriage return, punctuation is ASCII
// punctuation or any P* category.
#include "bert_text.hpp"

#include <utf8proc.h>

namespace inferopt::quant::bert_text {

namespace {

bool is_whitespace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
         c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

utf8proc_category_t category(char32_t c) { return utf8proc_category(static_cast<utf8proc_int32_t>(c)); }

bool is_control(char32_t c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  switch (category(c)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN: return true;
    default: return false;
  }
}

bool is_punctuation(char32_t c) {
  if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126)) return true;
  switch (category(c)) {
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO: return true;
    default: return false;
  }
}

bool is_chinese(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

/// NFD of one code point, appended to `out`.
void decompose(char32_t c, std::u32string& out) {
  utf8proc_int32_t buffer[32];
  int last = 0;
  const utf8proc_ssize_t n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(c), buffer, 32,
                                                     static_cast<utf8proc_option_t>(UTF8PROC_DECOMPOSE), &last);
  if (n <= 0 || n > 32) {
    out.push_back(c);
    return;
  }
  for (utf8proc_ssize_t k = 0; k < n; ++k) out.push_back(static_cast<char32_t>(buffer[k]));
}

}  // namespace

std::u32string decode_utf8(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(text.size());
  while (left > 0) {
    utf8proc_int32_t c = 0;
    const utf8proc_ssize_t n = utf8proc_iterate(p, left, &c);
    if (n <= 0) {  // an invalid byte: skip it
      out.push_back(0xFFFD);
      ++p;
      --left;
      continue;
    }
    out.push_back(static_cast<char32_t>(c));
    p += n;
    left -= n;
  }
  return out;
}

std::string encode_utf8(std::u32string_view text) {
  std::string out;
  out.reserve(text.size());
  utf8proc_uint8_t buffer[4];
  for (const char32_t c : text) {
    const utf8proc_ssize_t n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(c), buffer);
    out.append(reinterpret_cast<const char*>(buffer), static_cast<std::size_t>(n));
  }
  return out;
}

std::u32string normalize(std::u32string_view text, const normalizer_options& options) {
  std::u32string a;
  a.reserve(text.size());
  for (const char32_t c : text) {
    if (options.clean_text && (c == 0 || c == 0xFFFD || is_control(c))) continue;
    if (options.clean_text && is_whitespace(c)) {
      a.push_back(' ');
    } else if (options.handle_chinese_chars && is_chinese(c)) {
      a += U' ';
      a.push_back(c);
      a += U' ';
    } else {
      a.push_back(c);
    }
  }
  if (options.strip_accents) {
    std::u32string b;
    b.reserve(a.size());
    for (const char32_t c : a) {
      std::u32string parts;
      decompose(c, parts);
      for (const char32_t p : parts) {
        if (category(p) != UTF8PROC_CATEGORY_MN) b.push_back(p);
      }
    }
    a = std::move(b);
  }
  if (options.lowercase) {
    for (char32_t& c : a) c = static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c)));
  }
  return a;
}

std::vector<std::u32string> pre_tokenize(std::u32string_view text) {
  std::vector<std::u32string> words;
  std::u32string word;
  auto flush = [&] {
    if (!word.empty()) words.push_back(std::move(word));
    word.clear();
  };
  for (const char32_t c : text) {
    if (is_whitespace(c)) {
      flush();
    } else if (is_punctuation(c)) {
      flush();
      words.emplace_back(1, c);
    } else {
      word.push_back(c);
    }
  }
  flush();
  return words;
}

}  // namespace inferopt::quant::bert_text
