#include "kh/core/safetensors.h"

#include <algorithm>
#include <cstring>

#include "kh/core/error.h"
#include "kh/core/json_io.h"

namespace kh {
namespace {

// A header larger than this is not a plausible safetensors file (the reference implementation
// uses the same 100 MB bound) and would only waste memory.
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

std::uint64_t read_u64_le(const unsigned char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

SafetensorsReader::SafetensorsReader(std::filesystem::path path)
    : path_(std::move(path)), in_(path_, std::ios::binary) {
  const std::string file = path_.string();
  if (!in_) fail("{}: cannot open safetensors file", file);
  std::error_code ec;
  const std::uint64_t file_size = std::filesystem::file_size(path_, ec);
  if (ec) fail("{}: cannot stat: {}", file, ec.message());
  if (file_size < 8)
    fail("{}: truncated: {} bytes, a safetensors file has at least 8", file, file_size);

  unsigned char len_bytes[8];
  in_.read(reinterpret_cast<char*>(len_bytes), 8);
  const std::uint64_t header_len = read_u64_le(len_bytes);
  if (header_len > kMaxHeaderBytes)
    fail("{}: header length {} is implausibly large", file, header_len);
  if (header_len > file_size - 8)
    fail("{}: header length {} runs past the end of the file ({} bytes)", file, header_len,
         file_size);
  std::string header(header_len, '\0');
  in_.read(header.data(), static_cast<std::streamsize>(header_len));
  if (!in_) fail("{}: cannot read the {}-byte header", file, header_len);
  data_start_ = 8 + header_len;
  const std::uint64_t data_size = file_size - data_start_;

  const Json doc = parse_json(header, file + " (safetensors header)");
  const JsonCursor root(doc, file);
  if (!doc.is_object()) root.fail_here("safetensors header must be a JSON object");
  for (const auto& name : root.keys()) {
    const JsonCursor item = root.at(name);
    if (name == "__metadata__") {
      item.expect_object();
      for (const auto& key : item.keys()) metadata_[key] = item.at(key).as_string();
      continue;
    }
    item.expect_object();
    SafetensorsEntry e;
    e.name = name;
    const std::string dtype = item.at("dtype").as_string();
    const auto dt = dtype_from_safetensors_name(dtype);
    if (!dt) item.at("dtype").fail_here("unknown safetensors dtype \"" + dtype + "\"");
    e.dtype = *dt;
    const JsonCursor shape = item.at("shape");
    shape.expect_array();
    for (std::size_t i = 0; i < shape.size(); ++i) {
      const std::int64_t d = shape.at(i).as_int();
      if (d < 0) shape.at(i).fail_here("negative dimension");
      e.shape.push_back(d);
    }
    const JsonCursor offsets = item.at("data_offsets");
    offsets.expect_array();
    if (offsets.size() != 2) offsets.fail_here("expected [begin, end]");
    const std::int64_t b = offsets.at(0).as_int(), en = offsets.at(1).as_int();
    if (b < 0 || en < b) offsets.fail_here(fmt::format("invalid range [{}, {})", b, en));
    e.begin = static_cast<std::uint64_t>(b);
    e.end = static_cast<std::uint64_t>(en);
    if (e.end > data_size)
      offsets.fail_here(fmt::format("range [{}, {}) runs past the data section ({} bytes)", e.begin,
                                    e.end, data_size));
    const std::uint64_t want = storage_bytes(e.dtype, shape_numel(e.shape));
    if (e.end - e.begin != want)
      offsets.fail_here(fmt::format("range holds {} bytes but {} {} needs {}", e.end - e.begin,
                                    dtype, shape_string(e.shape), want));
    entries_.push_back(std::move(e));
  }

  std::vector<const SafetensorsEntry*> by_offset;
  for (const auto& e : entries_) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(),
            [](auto* a, auto* b) { return a->begin < b->begin; });
  for (std::size_t i = 1; i < by_offset.size(); ++i) {
    const auto* prev = by_offset[i - 1];
    const auto* cur = by_offset[i];
    if (cur->begin < prev->end && cur->end > cur->begin && prev->end > prev->begin)
      fail("{}: tensors '{}' [{}, {}) and '{}' [{}, {}) overlap", file, prev->name, prev->begin,
           prev->end, cur->name, cur->begin, cur->end);
  }
}

const SafetensorsEntry* SafetensorsReader::find(const std::string& name) const {
  for (const auto& e : entries_)
    if (e.name == name) return &e;
  return nullptr;
}

HostTensor SafetensorsReader::load(const std::string& name) {
  const SafetensorsEntry* e = find(name);
  if (!e) {
    std::string have;
    for (const auto& x : entries_) have += (have.empty() ? "" : ", ") + x.name;
    fail("{}: no tensor named '{}' (has: {})", path_.string(), name, have.empty() ? "none" : have);
  }
  HostTensor t(e->dtype, e->shape);
  in_.clear();
  in_.seekg(static_cast<std::streamoff>(data_start_ + e->begin));
  in_.read(reinterpret_cast<char*>(t.bytes()), static_cast<std::streamsize>(e->end - e->begin));
  if (!in_) fail("{}: cannot read the bytes of tensor '{}'", path_.string(), name);
  return t;
}

void write_safetensors(const std::filesystem::path& path, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata) {
  Json header = Json::object();
  if (!metadata.empty()) {
    Json m = Json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
    header["__metadata__"] = m;
  }
  std::uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    if (name == "__metadata__")
      fail("{}: '__metadata__' is not a valid tensor name", path.string());
    if (header.contains(name)) fail("{}: tensor name '{}' given twice", path.string(), name);
    const std::uint64_t n = t->nbytes();
    header[name] = {{"dtype", safetensors_dtype_name(t->dtype())},
                    {"shape", t->shape()},
                    {"data_offsets", {offset, offset + n}}};
    offset += n;
  }
  std::string text = header.dump();
  while ((8 + text.size()) % 8) text.push_back(' ');  // keep the data section 8-byte aligned

  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  const auto tmp = std::filesystem::path(path.string() + ".tmp");
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) fail("{}: cannot open for writing", tmp.string());
    unsigned char len[8];
    std::uint64_t n = text.size();
    for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(n >> (8 * i));
    out.write(reinterpret_cast<const char*>(len), 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const auto& [name, t] : tensors)
      out.write(reinterpret_cast<const char*>(t->bytes()),
                static_cast<std::streamsize>(t->nbytes()));
    out.flush();
    if (!out) fail("{}: write error", tmp.string());
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace kh
