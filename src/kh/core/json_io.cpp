#include "kh/core/json_io.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "kh/core/error.h"

namespace kh {

std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot open for reading", path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) fail("{}: read error", path.string());
  return ss.str();
}

void write_text_file_atomic(const std::filesystem::path& path, std::string_view text) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  const auto tmp = std::filesystem::path(path.string() + ".tmp");
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) fail("{}: cannot open for writing", tmp.string());
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.flush();
    if (!out) fail("{}: write error", tmp.string());
  }
  std::filesystem::rename(tmp, path);
}

Json parse_json(std::string_view text, const std::string& source) {
  try {
    return Json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    fail("{}: invalid JSON at byte {}: {}", source, e.byte, e.what());
  } catch (const nlohmann::json::exception& e) {  // e.g. a number literal out of double's range
    fail("{}: invalid JSON: {}", source, e.what());
  }
}

Json read_json_file(const std::filesystem::path& path) {
  return parse_json(read_text_file(path), path.string());
}

std::string json_type_name(const Json& j) {
  if (j.is_null()) return "null";
  if (j.is_boolean()) return j.get<bool>() ? "true" : "false";
  if (j.is_number()) return "number " + j.dump();
  if (j.is_string()) {
    std::string s = j.get<std::string>();
    if (s.size() > 40) s = s.substr(0, 40) + "...";
    return "string \"" + s + "\"";
  }
  if (j.is_array()) return "an array";
  return "an object";
}

std::string JsonCursor::where() const {
  return path_.empty() ? source_ : source_ + ": " + path_;
}

void JsonCursor::fail_here(std::string_view message) const {
  fail("{}: {}", where(), message);
}

void JsonCursor::expect_object() const {
  if (!value_->is_object()) fail_here("expected an object, got " + json_type_name(*value_));
}

void JsonCursor::expect_array() const {
  if (!value_->is_array()) fail_here("expected an array, got " + json_type_name(*value_));
}

bool JsonCursor::has(std::string_view key) const {
  return value_->is_object() && value_->contains(key);
}

JsonCursor JsonCursor::at(std::string_view key) const {
  expect_object();
  auto it = value_->find(key);
  const std::string child = path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  if (it == value_->end()) fail("{}: missing required field '{}'", where(), child);
  return JsonCursor(*it, source_, child);
}

std::optional<JsonCursor> JsonCursor::find(std::string_view key) const {
  expect_object();
  auto it = value_->find(key);
  if (it == value_->end() || it->is_null()) return std::nullopt;
  return JsonCursor(*it, source_,
                    path_.empty() ? std::string(key) : path_ + "." + std::string(key));
}

JsonCursor JsonCursor::at(std::size_t index) const {
  expect_array();
  if (index >= value_->size()) fail_here("index " + std::to_string(index) + " out of range");
  return JsonCursor((*value_)[index], source_, path_ + "[" + std::to_string(index) + "]");
}

std::string JsonCursor::as_string() const {
  if (!value_->is_string()) fail_here("expected a string, got " + json_type_name(*value_));
  return value_->get<std::string>();
}

std::int64_t JsonCursor::as_int() const {
  if (value_->is_number_integer()) return value_->get<std::int64_t>();
  if (value_->is_number_float()) {
    const double d = value_->get<double>();
    if (d == static_cast<double>(static_cast<std::int64_t>(d))) return static_cast<std::int64_t>(d);
  }
  fail_here("expected an integer, got " + json_type_name(*value_));
}

double JsonCursor::as_number() const {
  if (!value_->is_number()) fail_here("expected a number, got " + json_type_name(*value_));
  return value_->get<double>();
}

bool JsonCursor::as_bool() const {
  if (!value_->is_boolean()) fail_here("expected true or false, got " + json_type_name(*value_));
  return value_->get<bool>();
}

std::size_t JsonCursor::size() const {
  if (!value_->is_array() && !value_->is_object())
    fail_here("expected an array or object, got " + json_type_name(*value_));
  return value_->size();
}

std::vector<std::string> JsonCursor::keys() const {
  expect_object();
  std::vector<std::string> out;
  for (auto it = value_->begin(); it != value_->end(); ++it) out.push_back(it.key());
  return out;
}

}  // namespace kh
