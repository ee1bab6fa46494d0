// ArtifactStore's state, shared by the files that implement its methods (artifact_store.cpp for
// the evaluation and gate records, controller_store.cpp for the records of schema version 3).
// Private to store/: nothing outside includes it.
#pragma once

#include "kh/store/artifact_store.h"
#include "kh/store/blob_store.h"
#include "kh/store/schema.h"
#include "kh/store/sqlite_db.h"

namespace kh {

struct ArtifactStore::Impl {
  StoreLocation where;
  SqliteDb db;
  BlobStore blobs;
  int version;

  explicit Impl(const StoreLocation& w)
      : where(w),
        db(w.database(), [](SqliteDb& d) { refuse_newer_schema(d); }),
        blobs(w.blobs()),
        version(migrate_schema(db)) {}
};

}  // namespace kh
