// The `celery_beat` source: django-celery-beat's periodic tasks, the marker in their
// descriptions, and their last_run_at, read from the Django project's database.
//
//   sources:
//     beat:
//       type: celery_beat
//       dsn_file: /etc/schedwatch/celery-dsn   # "host=db dbname=app user=monitor password=..."
//       # dsn: sqlite:///srv/app/db.sqlite3    # or a connection string without a password
//       timeout: 10s
//   jobs:
//     - {role: nightly-export, source: beat, schedule: "0 3 * * *", timezone: Europe/Berlin}
//     - {role: heartbeat, source: beat, schedule: "@every 30s"}
//
// Per read: one read-only transaction, one SELECT of every periodic task joined with its
// crontab, interval, solar or clocked schedule (celery_beat_db.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "sources/celery_beat/celery_beat_db.h"
#include "sources/celery_beat/celery_beat_descriptor.h"
#include "sources/discoverer.h"
#include "sources/repairer.h"
#include "sources/source.h"

namespace schedwatch {

class CeleryBeatSource : public Source {
 public:
  static Result<std::unique_ptr<CeleryBeatSource>> Create(const SourceOptions& options);

  Result<SourceSnapshot> List(const ListContext& context) override;

  // The connection string: `dsn`, or `dsn_file` read again (credentials rotate).
  Result<std::string> Dsn() const;
  // One read of the tables (for discover too).
  Result<celery_beat::Tables> Read(const ListContext& context) const;

 private:
  CeleryBeatSource() = default;

  celery_beat::CeleryBeatSettings settings_;
  std::vector<std::string> roles_;  // sorted
};

// `dsn`, or the connection string in `dsn_file` (re-read each time: credentials rotate).
Result<std::string> LoadCeleryBeatDsn(const std::string& dsn, const std::string& dsn_file);

Result<std::unique_ptr<Source>> MakeCeleryBeatSource(const SourceOptions& options);
Result<std::unique_ptr<Discoverer>> MakeCeleryBeatDiscoverer(const SourceOptions& options);
// reconcile: inserts a missing task from its template (celery_beat_repairer.cc).
Result<std::unique_ptr<Repairer>> MakeCeleryBeatRepairer(const SourceSpec& source);

}  // namespace schedwatch
