#include "kh/core/shell_words.h"

#include "kh/core/error.h"

namespace kh {

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::vector<std::string> shell_words(const std::string& line, const std::string& what) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;  // a word has started (an empty quoted word counts)
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '\'') {
      const std::size_t end = line.find('\'', i + 1);
      if (end == std::string::npos)
        fail("{} \"{}\": a single quote at character {} is not closed", what, line, i + 1);
      word += line.substr(i + 1, end - i - 1);
      i = end;
    } else if (c == '"') {
      std::size_t j = i + 1;
      for (; j < line.size() && line[j] != '"'; ++j) {
        if (line[j] == '\\' && j + 1 < line.size() &&
            std::string("\"\\$`").find(line[j + 1]) != std::string::npos)
          ++j;
        word += line[j];
      }
      if (j >= line.size())
        fail("{} \"{}\": a double quote at character {} is not closed", what, line, i + 1);
      i = j;
    } else if (c == '\\') {
      if (i + 1 >= line.size()) fail("{} \"{}\": a backslash ends it", what, line);
      word += line[++i];
    } else {
      word += c;
    }
  }
  if (in_word) words.push_back(word);
  return words;
}

}  // namespace kh
