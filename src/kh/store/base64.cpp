#include "kh/store/base64.h"

#include <array>
#include <cstdint>

#include "kh/core/error.h"

namespace kh {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<int, 256> decode_table() {
  std::array<int, 256> t{};
  for (auto& v : t) v = -1;
  for (int i = 0; i < 64; ++i) t[static_cast<unsigned char>(kAlphabet[i])] = i;
  return t;
}

}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t v = static_cast<unsigned char>(bytes[i]) << 16 |
                            static_cast<unsigned char>(bytes[i + 1]) << 8 |
                            static_cast<unsigned char>(bytes[i + 2]);
    out += kAlphabet[v >> 18 & 63];
    out += kAlphabet[v >> 12 & 63];
    out += kAlphabet[v >> 6 & 63];
    out += kAlphabet[v & 63];
  }
  const std::size_t rest = bytes.size() - i;
  if (rest > 0) {
    std::uint32_t v = static_cast<unsigned char>(bytes[i]) << 16;
    if (rest == 2) v |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    out += kAlphabet[v >> 18 & 63];
    out += kAlphabet[v >> 12 & 63];
    out += rest == 2 ? kAlphabet[v >> 6 & 63] : '=';
    out += '=';
  }
  return out;
}

std::string base64_decode(std::string_view text, const std::string& where) {
  static constexpr std::array<int, 256> kTable = decode_table();
  if (text.size() % 4 != 0)
    fail("{}: base64 text of length {} is not a multiple of 4", where, text.size());
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    int padding = 0;
    std::uint32_t v = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      const char c = text[i + k];
      int d = 0;
      if (c == '=' && last && k >= 2) {
        ++padding;
      } else {
        d = kTable[static_cast<unsigned char>(c)];
        if (d < 0 || padding > 0)
          fail("{}: invalid base64 character '{}' at offset {}", where, c, i + k);
      }
      v = v << 6 | static_cast<std::uint32_t>(d);
    }
    out += static_cast<char>(v >> 16 & 0xff);
    if (padding < 2) out += static_cast<char>(v >> 8 & 0xff);
    if (padding < 1) out += static_cast<char>(v & 0xff);
  }
  return out;
}

}  // namespace kh
