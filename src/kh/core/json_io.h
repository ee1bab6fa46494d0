// JSON files and a cursor that walks a parsed document while remembering where it is, so every
// error names the file and the field path ("defs/x.json: inputs.q.dtype: expected a string, got
// 5"). Objects keep their key order: in a definition the order of inputs is the call signature.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace kh {

using Json = nlohmann::ordered_json;

std::string read_text_file(const std::filesystem::path& path);
/// Writes through a temporary file and a rename, so a crash never leaves a half-written file.
void write_text_file_atomic(const std::filesystem::path& path, std::string_view text);

/// Parses text; `source` names where it came from (file, or file:line) for error messages.
Json parse_json(std::string_view text, const std::string& source);
Json read_json_file(const std::filesystem::path& path);

/// One JSON value plus the file and field path that lead to it.
class JsonCursor {
 public:
  JsonCursor(const Json& value, std::string source, std::string path = "")
      : value_(&value), source_(std::move(source)), path_(std::move(path)) {}

  const Json& json() const { return *value_; }
  const std::string& source() const { return source_; }
  /// "file: field" for messages; the field part is left out at the document root.
  std::string where() const;

  bool has(std::string_view key) const;
  JsonCursor at(std::string_view key) const;                   // required member of an object
  std::optional<JsonCursor> find(std::string_view key) const;  // absent or null -> nullopt
  JsonCursor at(std::size_t index) const;                      // element of an array

  std::string as_string() const;
  std::int64_t as_int() const;
  double as_number() const;
  bool as_bool() const;
  void expect_object() const;
  void expect_array() const;
  std::size_t size() const;  // of an array or object
  std::vector<std::string> keys() const;

  /// Reports an error at this position: "file: field: message".
  [[noreturn]] void fail_here(std::string_view message) const;

 private:
  const Json* value_;
  std::string source_;
  std::string path_;
};

std::string json_type_name(const Json& j);

}  // namespace kh
