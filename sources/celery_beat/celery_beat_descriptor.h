// The `celery_beat` source type as the spec sees it: django-celery-beat's periodic tasks in a
// PostgreSQL or SQLite database, its settings decoded without I/O.
#pragma once

#include <chrono>
#include <string>

#include "schedwatch/source_type.h"

namespace schedwatch::celery_beat {

struct CeleryBeatSettings : SourceSettings {
  // A libpq connection string ("host=db dbname=app user=monitor", "postgresql://monitor@db/app")
  // or "sqlite:///path/to/db.sqlite3". Exactly one of dsn and dsn_file; a password only in the
  // file, which is re-read at each read (rotated credentials).
  std::string dsn;
  std::string dsn_file;
  // reconcile's own connection string (a role that may insert, docs/sources/celery_beat.md);
  // empty: the source's.
  std::string repair_dsn_file;
  // How long after a due time beat may take to write last_run_at back: DatabaseScheduler
  // writes it every beat_sync_every tasks or 3 minutes (its sync_every).
  std::chrono::seconds beat_lag{300};
};

// Whether a connection string holds a password (`password=`, or `user:secret@` in a URI).
bool DsnHasPassword(std::string_view dsn);

const SourceDescriptor& Descriptor();

}  // namespace schedwatch::celery_beat
