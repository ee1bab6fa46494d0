// SHA-256 against the FIPS 180-4 example vectors, one-shot and streamed in uneven pieces.
#include <string>

#include <gtest/gtest.h>

#include "kh/core/error.h"
#include "kh/core/sha256.h"

namespace kh {
namespace {

const std::string k448BitMessage = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";

TEST(Sha256, FipsVectors) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex(k448BitMessage),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, StreamingEqualsOneShot) {
  const std::string million(1000000, 'a');
  Sha256 streamed;
  // Pieces of 1..127 bytes cross the 64-byte block boundary at every offset.
  for (std::size_t pos = 0, step = 1; pos < million.size(); pos += step, step = step % 127 + 1)
    streamed.update(std::string_view(million).substr(pos, step));
  EXPECT_EQ(streamed.hex_digest(),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");

  // Messages of every length around the padding boundary (55, 56, 64 bytes).
  for (std::size_t n = 50; n < 130; ++n) {
    const std::string text(n, 'x');
    Sha256 h;
    h.update(text.substr(0, n / 3)).update(text.substr(n / 3));
    EXPECT_EQ(h.hex_digest(), sha256_hex(text)) << n;
  }
}

TEST(Sha256, DigestEndsTheHash) {
  Sha256 h;
  h.update("abc");
  EXPECT_EQ(h.digest().size(), 32u);
  EXPECT_THROW(h.update("more"), Error);
  EXPECT_THROW(h.hex_digest(), Error);
}

}  // namespace
}  // namespace kh
