// `kh note` end to end through the real binary: a note is recorded with its time, author and
// reference and listed back oldest first; bad input gets a one-line error naming it; the store's
// notes and rounds/<D>/notes.md both reach the reconnaissance section of the next round's brief;
// notes travel in bundles; notes an agent hands back in $KH_OUT/notes.md under kh agent are
// recorded for it.
#include <fstream>

#include <fmt/format.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kh/core/json_io.h"
#include "kh/ctl/round_manifest.h"
#include "test_support.h"

namespace kh::ctl {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kDecode = "gdn_decode_qk4_v8_d128_k_last";
const std::string kUrl = "https://github.com/fla-org/flash-linear-attention";

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

class NoteCli : public ::testing::Test {
 protected:
  std::string store() const { return (dir_.path() / "store").string(); }
  fs::path rounds() const { return dir_.path() / "rounds"; }
  test::CommandResult kh(const std::string& args, const std::string& store_dir = "") const {
    return test::run_command(fmt::format("env KH_MEMORY_DIR= {} {} --store {}", KH_BINARY, args,
                                         store_dir.empty() ? store() : store_dir));
  }
  test::CommandResult note(const std::string& args) const {
    return kh(fmt::format("note {} {} --root {}", kDecode, args, test::source_dir().string()));
  }
  Json listed(const std::string& store_dir = "") const {
    const auto r = kh(fmt::format("note {} --list --json", kDecode), store_dir);
    EXPECT_EQ(r.status, 0) << r.err;
    return r.out.empty() ? Json() : parse_json(r.out, "kh note --list --json");
  }
  test::ScopedTempDir dir_;
};

TEST_F(NoteCli, RecordsListsAndRefusesBadInput) {
  const auto first = note(fmt::format(
      "'fla chunks the prefill in 64-token blocks; its decode kernel reaches 52 % of DRAM "
      "bandwidth at B=64' --ref {} --json",
      kUrl));
  ASSERT_EQ(first.status, 0) << first.err;
  const Json n = parse_json(first.out, "kh note --json");
  EXPECT_EQ(n.at("definition"), kDecode);
  EXPECT_EQ(n.at("reference"), kUrl);
  EXPECT_EQ(n.at("id").get<std::string>().size(), 64u);
  EXPECT_FALSE(n.at("author").get<std::string>().empty());
  EXPECT_FALSE(n.at("created_at").get<std::string>().empty());
  // A path that exists (a line number allowed), and a note read from stdin.
  const std::string readme = (test::source_dir() / "README.md").string() + ":3";
  ASSERT_EQ(note("'kh promote is described in the README' --ref " + readme).status, 0);
  const auto piped = test::run_command(fmt::format(
      "printf 'two lines\\nfrom stdin\\n' | env KH_MEMORY_DIR= {} note {} - --store {} --root {}",
      KH_BINARY, kDecode, store(), test::source_dir().string()));
  ASSERT_EQ(piped.status, 0) << piped.err;
  EXPECT_THAT(piped.out, HasSubstr("recorded for " + kDecode));

  const Json all = listed();
  ASSERT_EQ(all.at("notes").size(), 3u);
  EXPECT_EQ(all["notes"][0]["id"], n.at("id")) << "oldest first";
  EXPECT_EQ(all["notes"][1]["reference"], readme);
  EXPECT_EQ(all["notes"][2]["text"], "two lines\nfrom stdin");
  const auto text = kh(fmt::format("note {} --list", kDecode));
  EXPECT_THAT(text.out, HasSubstr("3 notes"));
  EXPECT_THAT(text.out, HasSubstr("    ref: " + kUrl));

  const auto unknown = kh("note no_such_definition 'x' --root " + test::source_dir().string());
  EXPECT_NE(unknown.status, 0);
  EXPECT_THAT(unknown.err, HasSubstr("no definition no_such_definition"));
  const auto bad_ref = note("'x' --ref no/such/file.md");
  EXPECT_NE(bad_ref.status, 0);
  EXPECT_THAT(bad_ref.err, HasSubstr("--ref no/such/file.md: neither a URL"));
  const auto empty = note("'   '");
  EXPECT_NE(empty.status, 0);
  EXPECT_THAT(empty.err, HasSubstr("the note is empty"));
  const auto both = note("'x' --list");
  EXPECT_NE(both.status, 0);
  EXPECT_THAT(both.err, HasSubstr("--list shows the notes"));
  EXPECT_EQ(listed().at("notes").size(), 3u) << "refused notes are not recorded";
  EXPECT_TRUE(listed().at("definition") == kDecode);
}

TEST_F(NoteCli, TheStoresNotesAndNotesMdReachTheBrief) {
  ASSERT_EQ(
      note(fmt::format("'FlashInfer keeps the state in shared memory' --ref {}", kUrl)).status, 0);
  ASSERT_EQ(note("'one CTA per head underfills 132 SMs at B=1'").status, 0);
  test::write_file(rounds() / kDecode / "notes.md", "From the notes file: cp.async prefetch.\n");
  const auto started = kh(fmt::format("round start {} --rounds-dir {} --root {}", kDecode,
                                      rounds().string(), test::source_dir().string()));
  ASSERT_EQ(started.status, 0) << started.err;
  const std::string brief = read_text_file(round_dir(rounds(), kDecode, 1) / "brief.md");
  const auto recon = brief.find("## Reconnaissance");
  ASSERT_NE(recon, std::string::npos) << brief;
  const std::string section = brief.substr(recon, brief.find("## How the round is judged") - recon);
  EXPECT_THAT(section, HasSubstr("FlashInfer keeps the state in shared memory — <" + kUrl + ">"));
  EXPECT_THAT(section, HasSubstr("one CTA per head underfills 132 SMs at B=1"));
  EXPECT_LT(section.find("FlashInfer keeps"), section.find("one CTA per head")) << "oldest first";
  EXPECT_THAT(section, HasSubstr("From the notes file: cp.async prefetch."));
  EXPECT_THAT(section, HasSubstr("kh note " + kDecode));
  EXPECT_THAT(section, Not(HasSubstr("Nothing recorded yet")));
}

TEST_F(NoteCli, NotesTravelInBundles) {
  ASSERT_EQ(note("'measured on the borrowed H200: 2.24 us at B=1'").status, 0);
  const fs::path bundle = dir_.path() / "notes.khb";
  ASSERT_EQ(kh(fmt::format("store export -o {}", bundle.string())).status, 0);
  const std::string home = (dir_.path() / "home").string();
  const auto imported = kh(fmt::format("store import {}", bundle.string()), home);
  ASSERT_EQ(imported.status, 0) << imported.err;
  const Json notes = listed(home).at("notes");
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0]["text"], "measured on the borrowed H200: 2.24 us at B=1");
  EXPECT_EQ(notes[0]["id"], listed().at("notes")[0]["id"]);
}

TEST_F(NoteCli, NotesAnAgentHandsBackAreRecordedForIt) {
  // The store is out of an agent's reach; $KH_OUT/notes.md is its way to record what it learned.
  const std::string agent =
      "printf 'DeepGEMM multicasts K tiles with TMA across a cluster\\n' > \"$KH_OUT/notes.md\"";
  const auto r =
      kh(fmt::format("agent {} --cmd {} --rounds 1 --rounds-dir {} --root {} --json", kDecode,
                     quote(agent), rounds().string(), test::source_dir().string()));
  ASSERT_EQ(r.status, 0) << r.err;
  const Json notes = listed().at("notes");
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0]["text"], "DeepGEMM multicasts K tiles with TMA across a cluster");
  EXPECT_THAT(notes[0]["author"].get<std::string>(), HasSubstr("kh agent: printf"));
  const auto rounds_now = load_rounds(rounds(), kDecode);
  ASSERT_EQ(rounds_now.size(), 1u);
  EXPECT_EQ(rounds_now[0].decision, RoundRecord::Decision::kFailed) << "no candidate handed back";
  EXPECT_TRUE(rounds_now[0].agent_runs[0]["notes"].get<bool>());
  // And the next round's brief has it.
  ASSERT_EQ(kh(fmt::format("round start {} --rounds-dir {} --root {}", kDecode, rounds().string(),
                           test::source_dir().string()))
                .status,
            0);
  EXPECT_THAT(read_text_file(round_dir(rounds(), kDecode, 2) / "brief.md"),
              HasSubstr("DeepGEMM multicasts K tiles"));
}

}  // namespace
}  // namespace kh::ctl
