// Base64 (RFC 4648, standard alphabet, with padding): how a bundle carries blob bytes in JSON.
#pragma once

#include <string>
#include <string_view>

namespace kh {

std::string base64_encode(std::string_view bytes);
/// Strict: throws (naming `where`) on a character outside the alphabet, bad padding or length.
std::string base64_decode(std::string_view text, const std::string& where);

}  // namespace kh
