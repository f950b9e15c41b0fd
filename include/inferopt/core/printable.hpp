#pragma once
/// Text from strangers' files, made safe to print on one line: a name in a hostile model may
/// hold any bytes, and an error message that quotes it must neither break the line nor hand a
/// terminal (or a JSON encoder) bytes that are not UTF-8.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace inferopt {

/// The length of the well-formed UTF-8 sequence starting at `s[i]` (1 to 4), or 0 when the
/// bytes there are not one: overlong forms, surrogates and code points past U+10FFFF are
/// refused, as RFC 3629 says.
[[nodiscard]] inline std::size_t utf8_sequence_length(std::string_view s, std::size_t i) noexcept {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) return 1;
  std::size_t n = 0;
  unsigned char low = 0x80, high = 0xBF;  // range of the first continuation byte
  if (lead >= 0xC2 && lead <= 0xDF) n = 2;
  else if (lead >= 0xE0 && lead <= 0xEF) {
    n = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    n = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (byte(i + 1) < low || byte(i + 1) > high) return 0;
  for (std::size_t k = 2; k < n; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return n;
}

/// Whether `s` is well-formed UTF-8 (what protobuf's string fields must hold).
[[nodiscard]] inline bool is_utf8(std::string_view s) noexcept {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence_length(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

/// `s` on one line, as valid UTF-8: line breaks become spaces, other control bytes and bytes
/// that are not UTF-8 become `\xNN`.
[[nodiscard]] inline std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  constexpr char hex[] = "0123456789abcdef";
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t n = utf8_sequence_length(s, i);
    if (n > 1 || (n == 1 && c >= 0x20 && c != 0x7F)) {
      out.append(s.substr(i, n));
      i += n;
      continue;
    }
    if (c == '\n' || c == '\r') {
      out += ' ';
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 0xF];
    }
    ++i;
  }
  return out;
}

}  // namespace inferopt
