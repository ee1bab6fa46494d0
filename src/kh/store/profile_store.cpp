// ArtifactStore's methods for the profiles of schema version 4 (artifact_store.h): `kh profile`'s
// calls, the files as blobs and the columns a listing needs.
#include "kh/core/error.h"
#include "kh/store/artifact_store.h"
#include "kh/store/artifact_store_impl.h"
#include "kh/store/sqlite_db.h"
#include "kh/store/store_rows.h"

namespace kh {
namespace {

constexpr const char* kProfileColumns =
    "id, definition, candidate, workload, gpu, span_seconds, bottleneck, signature, profile_blob, "
    "ncu_blob, created_at";

ProfileRecord read_profile(const Statement& s) {
  ProfileRecord r;
  r.id = s.text(0);
  r.definition = s.text(1);
  r.candidate = s.text(2);
  r.workload = s.text(3);
  r.gpu = s.text(4);
  r.span_seconds = s.real(5);
  r.bottleneck = s.text(6);
  r.signature = s.text(7);
  r.profile_blob = s.text(8);
  r.ncu_blob = s.text(9);  // NULL reads as ""
  r.created_at = s.text(10);
  return r;
}

}  // namespace

std::string ArtifactStore::put_profile(const ProfileRecord& in) {
  if (in.definition.empty() || in.candidate.empty() || in.workload.empty() || in.profile_blob.empty())
    fail("cannot store a profile without its definition, candidate, workload and profile blob");
  {  // The same files of the same candidate are the same profile, whenever they were recorded.
    Statement same(impl_->db,
                   "SELECT id FROM profiles WHERE candidate = ? AND workload = ? AND profile_blob = ? "
                   "ORDER BY created_at LIMIT 1");
    same.bind(1, in.candidate).bind(2, in.workload).bind(3, in.profile_blob);
    if (same.step()) return same.text(0);
  }
  ProfileRecord r = in;
  for (std::string* text : {&r.definition, &r.gpu, &r.bottleneck, &r.signature})
    *text = rows::valid_utf8(*text);
  if (r.created_at.empty()) r.created_at = utc_timestamp();
  if (r.id.empty()) r.id = profile_id(r);
  Statement s(impl_->db, std::string("INSERT INTO profiles (") + kProfileColumns +
                             ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) "
                             "ON CONFLICT DO NOTHING");
  s.bind(1, r.id)
      .bind(2, r.definition)
      .bind(3, r.candidate)
      .bind(4, r.workload)
      .bind(5, r.gpu)
      .bind(6, r.span_seconds)
      .bind(7, r.bottleneck)
      .bind(8, r.signature)
      .bind(9, r.profile_blob)
      .bind_text_or_null(10, r.ncu_blob)
      .bind(11, r.created_at);
  s.run();
  return r.id;
}

std::optional<ProfileRecord> ArtifactStore::profile(const std::string& id) const {
  Statement s(impl_->db, std::string("SELECT ") + kProfileColumns + " FROM profiles WHERE id = ?");
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return read_profile(s);
}

std::vector<ProfileRecord> ArtifactStore::profiles(const std::string& definition,
                                                   const std::string& candidate) const {
  Statement s(impl_->db, std::string("SELECT ") + kProfileColumns +
                             " FROM profiles WHERE (?1 = '' OR definition = ?1) AND "
                             "(?2 = '' OR candidate = ?2) ORDER BY created_at DESC, rowid DESC");
  s.bind(1, definition).bind(2, candidate);
  std::vector<ProfileRecord> out;
  while (s.step()) out.push_back(read_profile(s));
  return out;
}

}  // namespace kh
