// Command lines as words, the way a POSIX shell reads and writes them: the commands kh records
// for people to rerun (quote), and the option strings it passes on to another verb (split), such
// as `kh round submit --promote "--fix 'a race in the scan'"`.
#pragma once

#include <string>
#include <vector>

namespace kh {

/// `s` as one shell word: single-quoted, a single quote inside written '\''.
std::string shell_quote(const std::string& s);

/// The words of `line`: split at unquoted whitespace; single quotes keep everything literally,
/// double quotes keep everything but a backslash before ", \, $ or `, and a backslash outside
/// quotes keeps the next character (a newline too: no line continuations). No expansion of any
/// kind. An unterminated quote or a trailing
/// backslash is an error naming `what` (the option the line came from).
std::vector<std::string> shell_words(const std::string& line, const std::string& what);

}  // namespace kh
