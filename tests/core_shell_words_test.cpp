// Option strings passed on to another verb (kh round submit --promote "...") split as a shell
// would, so that a quoted value such as kh promote --fix 'a race' stays one word; and the quoting
// of recorded commands reads back as the words it quoted.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kh/core/error.h"
#include "kh/core/shell_words.h"

namespace kh {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ShellWords, SplitsAtUnquotedWhitespaceAndKeepsQuotedWordsWhole) {
  EXPECT_THAT(shell_words("  --backend cuda\t--timing  cupti ", "--promote"),
              ElementsAre("--backend", "cuda", "--timing", "cupti"));
  EXPECT_THAT(shell_words("--fix 'a race in the scan' --trials 1", "--promote"),
              ElementsAre("--fix", "a race in the scan", "--trials", "1"));
  EXPECT_THAT(shell_words(R"(--fix "E_g's \"ready\" count" x\ y)", "--promote"),
              ElementsAre("--fix", "E_g's \"ready\" count", "x y"));
  EXPECT_THAT(shell_words("a''b '' \"\"", "--promote"), ElementsAre("ab", "", ""));
  EXPECT_TRUE(shell_words("   ", "--promote").empty());
}

TEST(ShellWords, AnUnclosedQuoteOrATrailingBackslashIsAnErrorNamingTheOption) {
  try {
    shell_words("--fix 'a race", "--promote");
    FAIL() << "accepted an unclosed quote";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("--promote \"--fix 'a race\": a single quote at character 7"));
  }
  EXPECT_THROW(shell_words("--fix \"a race", "--promote"), Error);
  EXPECT_THROW(shell_words("--fix a\\", "--promote"), Error);
}

TEST(ShellWords, QuotedWordsSplitBackToThemselves) {
  for (const std::string w : {"plain", "a race in the scan", "it's", "", "'\"\\$"})
    EXPECT_THAT(shell_words(shell_quote(w) + " next", "test"), ElementsAre(w, "next")) << w;
}

}  // namespace
}  // namespace kh
