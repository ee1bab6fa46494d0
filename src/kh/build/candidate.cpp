#include "kh/build/candidate.h"

#include <algorithm>
#include <regex>
#include <set>

#define TOML_HEADER_ONLY 1
#include <toml++/toml.h>

#include "kh/core/error.h"
#include "kh/core/json_io.h"

namespace kh {
namespace {

namespace fs = std::filesystem;

const std::regex kIdentifier("[A-Za-z_][A-Za-z0-9_]*");
// Param values become preprocessor tokens and parts of file names: keep them plain.
const std::regex kParamText("[A-Za-z0-9_.+-]+");
const std::regex kCudaTarget("sm_([0-9]{2,3})([af]?)");

std::string join(const std::vector<std::string>& items, std::string_view separator = ", ") {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

// A value as the error messages show it.
std::string describe(const toml::node& node) {
  if (const auto* s = node.as_string()) {
    std::string text = s->get();
    if (text.size() > 60) text = text.substr(0, 60) + "...";
    return "\"" + text + "\"";
  }
  if (const auto* i = node.as_integer()) return std::to_string(i->get());
  if (const auto* f = node.as_floating_point()) return fmt::format("{}", f->get());
  if (const auto* b = node.as_boolean()) return b->get() ? "true" : "false";
  if (node.is_array()) return "an array";
  if (node.is_table()) return "a table";
  return "a date/time";
}

// The manifest being read: every error names its file and the field path.
class Manifest {
 public:
  explicit Manifest(fs::path file) : file_(std::move(file)) {}

  [[noreturn]] void fail_at(std::string_view field, std::string_view message) const {
    fail("{}: {}: {}", file_.string(), field, message);
  }

  const toml::table& table(const toml::table& parent, const std::string& key, bool required) const {
    static const toml::table kEmpty;
    const toml::node* node = parent.get(key);
    if (node == nullptr) {
      if (required) fail_at(key, "missing; the manifest needs a [" + key + "] table");
      return kEmpty;
    }
    if (!node->is_table()) fail_at(key, "expected a table, got " + describe(*node));
    return *node->as_table();
  }

  void check_keys(const toml::table& table, const std::string& section,
                  const std::vector<std::string>& allowed) const {
    for (auto&& [key, node] : table) {
      const std::string name(key.str());
      if (std::find(allowed.begin(), allowed.end(), name) == allowed.end())
        fail_at(section.empty() ? name : section + "." + name,
                "unknown key; expected one of " + join(allowed));
    }
  }

  std::string string(const toml::table& table, const std::string& section, const std::string& key,
                     bool required) const {
    const std::string field = section + "." + key;
    const toml::node* node = table.get(key);
    if (node == nullptr) {
      if (required) fail_at(field, "missing (a string is required)");
      return {};
    }
    if (!node->is_string()) fail_at(field, "expected a string, got " + describe(*node));
    const std::string value = node->as_string()->get();
    if (required && value.empty()) fail_at(field, "must not be empty");
    return value;
  }

  std::vector<std::string> strings(const toml::table& table, const std::string& section,
                                   const std::string& key, bool required) const {
    const std::string field = section + "." + key;
    const toml::node* node = table.get(key);
    if (node == nullptr) {
      if (required) fail_at(field, "missing (an array of strings is required)");
      return {};
    }
    const toml::array* array = node->as_array();
    if (array == nullptr) fail_at(field, "expected an array of strings, got " + describe(*node));
    std::vector<std::string> out;
    for (std::size_t i = 0; i < array->size(); ++i) {
      const toml::node& item = *array->get(i);
      if (!item.is_string())
        fail_at(fmt::format("{}[{}]", field, i), "expected a string, got " + describe(item));
      out.push_back(item.as_string()->get());
    }
    if (required && out.empty()) fail_at(field, "must not be empty");
    return out;
  }

 private:
  fs::path file_;
};

// A source path as written must stay inside the candidate folder.
std::string check_source_path(const Manifest& m, const fs::path& dir, const std::string& path,
                              const std::string& field) {
  const fs::path p(path);
  if (path.empty()) m.fail_at(field, "must not be empty");
  if (p.is_absolute()) m.fail_at(field, fmt::format("\"{}\" must be relative to the folder", path));
  for (const auto& part : p)
    if (part == "..") m.fail_at(field, fmt::format("\"{}\" must not contain \"..\"", path));
  const std::string normal = p.lexically_normal().generic_string();
  std::error_code ec;
  if (!fs::exists(dir / normal, ec))
    m.fail_at(field, fmt::format("file \"{}\" does not exist", path));
  if (!fs::is_regular_file(dir / normal, ec))
    m.fail_at(field, fmt::format("\"{}\" is not a regular file", path));
  return normal;
}

std::vector<ParamSpec> read_params(const Manifest& m, const toml::table& table) {
  std::vector<ParamSpec> params;
  for (auto&& [key, node] : table) {
    ParamSpec spec{std::string(key.str()), {}};
    const std::string field = "params." + spec.name;
    if (!std::regex_match(spec.name, kIdentifier))
      m.fail_at(field, "a param name must be a C identifier (it becomes -D" + spec.name + "=...)");
    const toml::array* values = node.as_array();
    if (values == nullptr || values->empty())
      m.fail_at(field, "expected a non-empty array of allowed values, got " + describe(node));
    for (std::size_t i = 0; i < values->size(); ++i) {
      const toml::node& item = *values->get(i);
      const std::string where = fmt::format("{}[{}]", field, i);
      std::string text;
      if (const auto* s = item.as_string()) {
        text = s->get();
        if (!std::regex_match(text, kParamText))
          m.fail_at(where, "a string value may hold only letters, digits and _ . + -, got " +
                               describe(item));
      } else if (const auto* n = item.as_integer()) {
        text = std::to_string(n->get());
      } else if (const auto* b = item.as_boolean()) {
        text = b->get() ? "true" : "false";
      } else {
        m.fail_at(where, "expected an integer, a boolean or a string, got " + describe(item));
      }
      if (std::find(spec.values.begin(), spec.values.end(), text) != spec.values.end())
        m.fail_at(where, fmt::format("value \"{}\" is listed twice", text));
      spec.values.push_back(text);
    }
    params.push_back(std::move(spec));
  }
  std::sort(params.begin(), params.end(),
            [](const ParamSpec& a, const ParamSpec& b) { return a.name < b.name; });
  return params;
}

std::string manifest_name(const Candidate& c) {
  return (c.manifest.empty() ? c.dir / kCandidateManifest : c.manifest).string();
}

const ParamSpec* find_param(const Candidate& c, const std::string& name) {
  for (const auto& p : c.params)
    if (p.name == name) return &p;
  return nullptr;
}

std::string param_names(const Candidate& c) {
  if (c.params.empty()) return "the candidate has no params";
  std::vector<std::string> names;
  for (const auto& p : c.params) names.push_back(p.name);
  return "the candidate's params are " + join(names);
}

void check_param_value(const Candidate& c, const ParamSpec& p, const std::string& value) {
  if (std::find(p.values.begin(), p.values.end(), value) == p.values.end())
    fail("{}: params.{}: value \"{}\" is not allowed; allowed: {}", manifest_name(c), p.name, value,
         join(p.values));
}

}  // namespace

Candidate load_candidate(const fs::path& path) {
  std::error_code ec;
  const fs::path file = fs::is_directory(path, ec) ? path / kCandidateManifest : path;
  if (!fs::exists(file, ec)) fail("{}: no such candidate manifest", file.string());
  const std::string text = read_text_file(file);
  const Manifest m(file);

  toml::table root;
  try {
    root = toml::parse(text, file.string());
  } catch (const toml::parse_error& e) {
    fail("{}:{}:{}: invalid TOML: {}", file.string(), e.source().begin.line,
         e.source().begin.column, e.description());
  }

  Candidate c;
  c.manifest = file;
  c.dir = fs::weakly_canonical(fs::absolute(file)).parent_path();
  m.check_keys(root, "", {"solution", "build", "params"});

  const toml::table& solution = m.table(root, "solution", true);
  m.check_keys(solution, "solution", {"name", "definition", "author", "description"});
  c.name = m.string(solution, "solution", "name", true);
  c.definition = m.string(solution, "solution", "definition", true);
  c.author = m.string(solution, "solution", "author", true);
  c.description = m.string(solution, "solution", "description", false);

  const toml::table& build = m.table(root, "build", true);
  m.check_keys(build, "build",
               {"language", "sources", "entry", "flags", "targets", "destination_passing_style"});
  c.language = m.string(build, "build", "language", true);
  if (c.language != "cuda" && c.language != "cpp" && !is_python_language(c.language))
    m.fail_at("build.language",
              fmt::format("expected \"cuda\", \"cpp\", \"python\" or \"triton\", got {}",
                          describe(*build.get("language"))));

  const auto sources = m.strings(build, "build", "sources", true);
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const std::string field = fmt::format("build.sources[{}]", i);
    const std::string normal = check_source_path(m, c.dir, sources[i], field);
    if (std::find(c.sources.begin(), c.sources.end(), normal) != c.sources.end())
      m.fail_at(field, fmt::format("\"{}\" is listed twice", sources[i]));
    c.sources.push_back(normal);
  }
  if (std::none_of(c.sources.begin(), c.sources.end(),
                   [&](const std::string& s) { return is_compiled_source(c.language, s); }))
    m.fail_at("build.sources", is_python_language(c.language)
                                   ? "no Python file (.py)"
                               : c.language == "cuda"
                                   ? "no file the compiler takes (.cu, .cpp, .cc, .cxx, .c)"
                                   : "no file the compiler takes (.cpp, .cc, .cxx, .c)");

  const std::string entry = m.string(build, "build", "entry", true);
  c.entry = parse_entry_point(entry, file.string() + ": build.entry");
  c.entry.file = fs::path(c.entry.file).lexically_normal().generic_string();
  if (std::find(c.sources.begin(), c.sources.end(), c.entry.file) == c.sources.end())
    m.fail_at("build.entry", fmt::format("file \"{}\" is not among build.sources ({})",
                                         c.entry.file, join(c.sources)));
  if (!std::regex_match(c.entry.symbol, kIdentifier))
    m.fail_at("build.entry", fmt::format("symbol \"{}\" is not a C identifier", c.entry.symbol));

  if (is_python_language(c.language)) {
    if (fs::path(c.entry.file).extension() != ".py")
      m.fail_at("build.entry", fmt::format("a {} entry is \"file.py::function\", got \"{}\"",
                                           c.language, entry));
    if (build.get("flags") != nullptr)
      m.fail_at("build.flags", "only for compiled languages, this candidate is \"" + c.language + "\"");
  } else if (build.get("destination_passing_style") != nullptr) {
    m.fail_at("build.destination_passing_style",
              "only for Python candidates: a " + c.language + " entry always writes its outputs");
  }
  if (const auto* dps = build.get("destination_passing_style")) {
    if (!dps->is_boolean())
      m.fail_at("build.destination_passing_style",
                fmt::format("expected true or false, got {}", describe(*dps)));
    c.destination_passing_style = dps->as_boolean()->get();
  }

  c.flags = m.strings(build, "build", "flags", false);
  if (build.get("targets") != nullptr) {
    if (c.language != "cuda")
      m.fail_at("build.targets",
                "only for language \"cuda\", this candidate is \"" + c.language + "\"");
    c.targets = m.strings(build, "build", "targets", true);
    for (std::size_t i = 0; i < c.targets.size(); ++i)
      cuda_gencode_flag(c.targets[i], fmt::format("{}: build.targets[{}]", file.string(), i));
  } else if (c.language == "cuda") {
    c.targets = {kDefaultCudaTarget};
  }

  c.params = read_params(m, m.table(root, "params", false));
  return c;
}

ParamValues default_params(const Candidate& c) {
  ParamValues values;
  for (const auto& p : c.params) values[p.name] = p.values.front();
  return values;
}

ParamValues resolve_params(const Candidate& c, const std::vector<std::string>& overrides) {
  ParamValues values = default_params(c);
  std::set<std::string> given;
  for (const auto& o : overrides) {
    const auto eq = o.find('=');
    if (eq == std::string::npos || eq == 0)
      fail("{}: param override \"{}\": expected NAME=value", manifest_name(c), o);
    const std::string name = o.substr(0, eq);
    const std::string value = o.substr(eq + 1);
    const ParamSpec* p = find_param(c, name);
    if (p == nullptr)
      fail("{}: params: no param \"{}\"; {}", manifest_name(c), name, param_names(c));
    if (!given.insert(name).second)
      fail("{}: params.{}: given twice in the overrides", manifest_name(c), name);
    check_param_value(c, *p, value);
    values[name] = value;
  }
  return values;
}

void check_params(const Candidate& c, const ParamValues& values) {
  for (const auto& [name, value] : values) {
    const ParamSpec* p = find_param(c, name);
    if (p == nullptr)
      fail("{}: params: no param \"{}\"; {}", manifest_name(c), name, param_names(c));
    check_param_value(c, *p, value);
  }
  for (const auto& p : c.params)
    if (!values.count(p.name))
      fail("{}: params.{}: no value given; allowed: {}", manifest_name(c), p.name, join(p.values));
}

bool is_python_language(const std::string& language) {
  return language == "python" || language == "triton";
}

bool is_compiled_source(const std::string& language, const std::string& path) {
  const std::string ext = fs::path(path).extension().string();
  if (is_python_language(language)) return ext == ".py";
  if (ext == ".cpp" || ext == ".cc" || ext == ".cxx" || ext == ".c") return true;
  return language == "cuda" && ext == ".cu";
}

std::string cuda_gencode_flag(const std::string& target, const std::string& where) {
  std::smatch match;
  if (!std::regex_match(target, match, kCudaTarget))
    fail("{}: expected a CUDA target like \"sm_90a\" (sm_<major><minor>[a|f]), got \"{}\"", where,
         target);
  const std::string arch = match[1].str() + match[2].str();
  return "-gencode=arch=compute_" + arch + ",code=sm_" + arch;
}

}  // namespace kh
