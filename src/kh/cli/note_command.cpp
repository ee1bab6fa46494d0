// `kh note D TEXT [--ref URL-or-path]` records a reconnaissance note for definition D in the
// store (what was learned — facts and numbers — and where); `kh note D --list` shows D's notes.
// kh round start puts them in the next brief's reconnaissance section, and they travel in
// bundles with the rest of the store. TEXT "-" reads the note from stdin. --json for scripts.
#include <iostream>
#include <iterator>
#include <regex>

#include <fmt/format.h>

#include "kh/cli/commands.h"
#include "kh/cli/store_access.h"
#include "kh/core/error.h"
#include "kh/core/person.h"
#include "kh/spec/dataset.h"

namespace kh::cli {
namespace {

namespace fs = std::filesystem;

struct Options {
  std::string definition;
  std::string text;
  std::string reference;
  std::string root = ".";
  bool list = false;
  bool json = false;
  StoreOptions store;
};

Json note_json(const NoteRecord& n) {
  return {{"id", n.id},         {"definition", n.definition},
          {"text", n.text},     {"reference", n.reference},
          {"author", n.author}, {"created_at", n.created_at}};
}

// A note about a definition nobody knows would never reach a brief: D must be in the dataset or
// the store (which knows the definitions it has judged candidates of).
void check_definition(const Options& o, const ArtifactStore& store) {
  if (store.definition_json(o.definition)) return;
  if (fs::is_directory(o.root)) {
    const Dataset ds = Dataset::open(o.root);
    if (ds.definitions().count(o.definition)) return;
  }
  fail("kh note {}: no definition {} in the dataset at {} (--root) or in the store {}",
       o.definition, o.definition, o.root, o.store.dir);
}

// A URL ("scheme://..."), or a path that exists (a trailing ":LINE" allowed).
void check_reference(const std::string& ref) {
  static const std::regex kUrl(R"([A-Za-z][A-Za-z0-9+.\-]*://\S+)");
  static const std::regex kLine(R"((.*):\d+)");
  if (std::regex_match(ref, kUrl)) return;
  std::smatch m;
  const std::string path = std::regex_match(ref, m, kLine) ? m[1].str() : ref;
  if (!path.empty() && fs::exists(path)) return;
  fail("--ref {}: neither a URL (scheme://...) nor an existing file or folder", ref);
}

std::string trimmed(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

std::string indented(const std::string& text, const std::string& pad) {
  std::string out = pad;
  for (char c : text) out += c == '\n' ? "\n" + pad : std::string(1, c);
  return out;
}

void list(const Options& o, const ArtifactStore& store) {
  const auto notes = store.notes(o.definition);
  if (o.json) {
    Json items = Json::array();
    for (const auto& n : notes) items.push_back(note_json(n));
    std::cout << Json{{"definition", o.definition}, {"notes", items}}.dump(2) << "\n";
    return;
  }
  if (notes.empty()) {
    std::cout << fmt::format("{}: no notes (kh note {} TEXT --ref URL records one)\n", o.definition,
                             o.definition);
    return;
  }
  std::cout << fmt::format("{}: {} note{}\n", o.definition, notes.size(),
                           notes.size() == 1 ? "" : "s");
  for (const auto& n : notes) {
    std::cout << fmt::format("  {}  {}  {}\n{}\n", n.created_at, n.author, n.id.substr(0, 12),
                             indented(n.text, "    "));
    if (!n.reference.empty()) std::cout << "    ref: " << n.reference << "\n";
  }
}

void run(const Options& o) {
  if (o.list && (!o.text.empty() || !o.reference.empty()))
    fail("kh note {}: --list shows the notes; it takes no TEXT or --ref", o.definition);
  if (!o.list && o.text.empty())
    fail("kh note {}: give the note's TEXT (\"-\" reads it from stdin), or --list", o.definition);
  if (o.list) return list(o, *open_store(o.store));
  std::string text = o.text;
  if (text == "-") text.assign(std::istreambuf_iterator<char>(std::cin), {});
  text = trimmed(text);
  if (text.empty()) fail("kh note {}: the note is empty", o.definition);
  if (!o.reference.empty()) check_reference(o.reference);
  auto store = open_store(o.store);
  check_definition(o, *store);
  NoteRecord n;
  n.definition = o.definition;
  n.text = text;
  n.reference = o.reference;
  n.author = person_name();
  n.created_at = utc_timestamp();
  n.id = store->put_note(n);
  if (o.json)
    std::cout << note_json(n).dump(2) << "\n";
  else
    std::cout << fmt::format("note {} recorded for {} (the next kh round start {} brief has it)\n",
                             n.id.substr(0, 12), o.definition, o.definition);
}

}  // namespace

void add_note_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand(
      "note", "Record a reconnaissance note for a definition (the next round's brief has it)");
  cmd->add_option("definition", o->definition, "the definition")->required();
  cmd->add_option("text", o->text, "the note (\"-\": read it from stdin)");
  cmd->add_option("--ref", o->reference, "where it comes from: a URL or a path");
  cmd->add_flag("--list", o->list, "show the definition's notes, oldest first");
  cmd->add_option("--root,--dataset", o->root, "dataset folder the definition is checked in")
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "print as JSON");
  add_store_option(cmd, o->store);
  cmd->callback([o] { run(*o); });
}

}  // namespace kh::cli
