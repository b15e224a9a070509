// What a kind of scheduler tells the spec about itself: the settings of its source block and how
// to decode them, the job keys only its jobs have, and how its scheduler reads a cron line. Each
// folder under sources/ describes itself with one SourceDescriptor; the spec is parsed against a
// SourceCatalog of them, so the core names no scheduler.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "schedwatch/schedule.h"

namespace schedwatch {

struct JobSpec;

// A source block's settings, decoded. Each source type derives its own struct; the source it
// makes and its repairer read that struct, never the YAML.
struct SourceSettings {
  virtual ~SourceSettings() = default;
  // Read outside the source too. `timeout`: the whole read's limit (unset: the refresher's
  // --refresh.source-timeout). `runs_dir`: where schedwatch_run records the source's jobs
  // (`<runs_dir>/<role>`, unless the job sets its own); empty for none.
  std::optional<std::chrono::seconds> timeout;
  std::string runs_dir;
};

// A job's keys that only its source type has, decoded (each type derives its own struct, as for
// SourceSettings), so that JobSpec grows no field per scheduler.
struct JobSettings {
  virtual ~JobSettings() = default;
};

// One mapping of the spec (a source block, or a job's type-specific keys) while it is decoded.
// A getter returns nullopt when the key is absent or its value is wrong; a wrong value is
// reported at its file:line:column and decoding goes on, so that every problem shows at once.
// Decoding is pure: nothing here reads a file or the environment.
class SettingsReader {
 public:
  virtual ~SettingsReader() = default;
  virtual bool Has(std::string_view key) const = 0;
  virtual std::optional<std::string> String(std::string_view key) = 0;
  // A path; relative ones are anchored at the spec's directory ("~/x" is left to the source).
  virtual std::optional<std::string> Path(std::string_view key) = 0;
  // One value or a list of them.
  virtual std::optional<std::vector<std::string>> List(std::string_view key) = 0;
  virtual std::optional<std::vector<std::string>> PathList(std::string_view key) = 0;
  virtual std::optional<bool> Bool(std::string_view key) = 0;  // true | false
  virtual std::optional<std::int64_t> Integer(std::string_view key, std::int64_t min,
                                              std::int64_t max) = 0;
  // A wait of the exporter's own loop: longer than 0s and at most a day.
  virtual std::optional<std::chrono::seconds> Wait(std::string_view key) = 0;
  // Reports a problem with the value of `key`, or with item `index` of its list.
  virtual void Problem(std::string_view key, std::string_view message) = 0;
  virtual void ItemProblem(std::string_view key, std::size_t index, std::string_view message) = 0;
};

// The settings every source type may have, `timeout` and `runs_dir`, when its keys list them.
void ReadCommonSettings(SettingsReader& reader, SourceSettings& settings);

struct SettingKey {
  std::string name;
  bool required = false;
};

// A job key that only jobs of some source types have.
struct JobKey {
  std::string name;
  bool required = false;
  std::string missing_hint;  // said after "missing required key"
  std::string elsewhere;     // the error when a job of another type sets it
};

class SourceDescriptor {
 public:
  virtual ~SourceDescriptor() = default;
  virtual std::string_view type() const = 0;

  // The keys of the source block besides `type`, in the order messages list them.
  virtual const std::vector<SettingKey>& settings_keys() const = 0;
  // Never null; the spec is refused when the reader reported a problem.
  virtual std::unique_ptr<SourceSettings> DecodeSettings(SettingsReader& reader) const = 0;

  // Job keys only this type's jobs have, and how they land in the JobSpec.
  virtual const std::vector<JobKey>& job_keys() const;
  virtual void DecodeJob(SettingsReader& reader, JobSpec& job) const;
  // Why a job of this type may not set a key every other type's jobs may ("" when it may).
  virtual std::string RefuseJobKey(std::string_view key) const;

  // How late the scheduler may start a run by design (GitLab's schedule worker runs every few
  // minutes): added to the start grace of every job of a source with these settings.
  virtual std::int64_t StartLatency(const SourceSettings& settings) const {
    (void)settings;
    return 0;
  }

  // Where a run of this source's jobs is seen, for people ("cron log /var/log/syslog").
  virtual std::string RunHistoryOrigin(const SourceSettings& settings) const = 0;

  // True when every read reports the whole run history (a snapshot file), so that runs a read
  // no longer shows are gone, not merely forgotten by the scheduler.
  virtual bool reports_complete_history() const { return false; }

  // How this type's scheduler reads a schedule.
  virtual CronDialect dialect() const = 0;
  virtual DstPolicy dst_policy() const { return DstPolicy::kWallClock; }
  virtual bool allows_reboot() const { return false; }  // @reboot: no fire times
};

// The source types a spec may use, by name. The caller fills it (sources/catalog.h holds the
// built-in ones); descriptors must outlive it.
class SourceCatalog {
 public:
  void Add(const SourceDescriptor& descriptor);
  const SourceDescriptor* Find(std::string_view type) const;
  std::vector<std::string> Types() const;  // sorted
  const std::map<std::string, const SourceDescriptor*, std::less<>>& descriptors() const {
    return descriptors_;
  }

 private:
  std::map<std::string, const SourceDescriptor*, std::less<>> descriptors_;
};

}  // namespace schedwatch
