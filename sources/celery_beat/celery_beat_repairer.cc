// celery_beat: the template is a periodic task in YAML, the columns of django-celery-beat's
// PeriodicTask that matter and its crontab or interval schedule:
//
//   name: nightly-export
//   task: proj.tasks.export
//   description: "Nightly export [schedwatch: role=nightly-export spec_version=2]"
//   crontab: "0 3 * * *"    # minute hour day_of_month month_of_year day_of_week
//   timezone: Europe/Berlin
//   # every: 30             # or an interval: every, period (seconds, minutes, hours, days)
//   # period: seconds
//   args: '["s3://exports"]'  # JSON, as the admin takes them
//   kwargs: '{}'
//   queue: exports
//
// Inserted in one read-write transaction with reconcile's own connection string
// (`repair_dsn_file`): never over a task of that name, an equal schedule row reused.
#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "schedwatch/classify.h"
#include "schedwatch/yaml_tree.h"
#include "sources/celery_beat/celery_beat_db.h"
#include "sources/celery_beat/celery_beat_mapping.h"
#include "sources/celery_beat/celery_beat_source.h"

namespace schedwatch {
namespace {

constexpr std::size_t kMaxJson = 64 * 1024;

// The template as the row it would insert, checked against `job` as a live task would be.
Result<celery_beat::NewTask> ReadTaskTemplate(std::string_view text, const JobSpec& job) {
  auto document = YamlDocument::Parse(text);
  if (!document) return Error{"not YAML: " + document.error()};
  YamlNode root = document->root();
  if (!root.IsMapping()) return Error{"must be a mapping of a periodic task's fields"};
  static const std::set<std::string_view> kKeys = {"name",     "task",  "description", "crontab",
                                                   "timezone", "every", "period",      "args",
                                                   "kwargs",   "queue"};
  std::map<std::string, std::string> fields;
  for (std::size_t i = 0; i < root.size(); ++i) {
    if (!root.key(i).IsScalar() || !kKeys.count(root.key(i).scalar())) {
      return Error{fmt::format(
          "unknown key {} (name, task, description, crontab, timezone, every, period, args, "
          "kwargs, queue)",
          root.key(i).Describe())};
    }
    if (!root.value(i).IsScalar()) {
      return Error{fmt::format("{}: must be a string", root.key(i).scalar())};
    }
    fields[std::string(root.key(i).scalar())] = std::string(root.value(i).scalar());
  }
  celery_beat::NewTask task;
  for (auto [key, target] : {std::pair{"name", &task.name}, std::pair{"task", &task.task},
                             std::pair{"description", &task.description}}) {
    if (fields[key].empty()) return Error{fmt::format("{}: missing", key)};
    *target = fields[key];
  }
  for (auto [key, target] : {std::pair{"args", &task.args}, std::pair{"kwargs", &task.kwargs}}) {
    if (!fields.count(key)) continue;
    *target = fields[key];
    auto json = nlohmann::json::parse(*target, nullptr, false);
    if (target->size() > kMaxJson || json.is_discarded() ||
        json.is_array() != (std::string_view(key) == "args") ||
        json.is_object() != (std::string_view(key) == "kwargs")) {
      return Error{fmt::format("{}: must be a JSON {}", key,
                               std::string_view(key) == "args" ? "list" : "object")};
    }
  }
  task.queue = fields["queue"];
  // The row as the source would read it back.
  celery_beat::Row row(celery_beat::kTaskColumns);
  row[celery_beat::kName] = task.name;
  row[celery_beat::kTask] = task.task;
  row[celery_beat::kEnabled] = "t";
  row[celery_beat::kOneOff] = "f";
  row[celery_beat::kDescription] = task.description;
  if (fields.count("crontab") == fields.count("every") ||
      fields.count("every") != fields.count("period")) {
    return Error{"needs either crontab (and timezone) or every and period"};
  }
  if (fields.count("crontab")) {
    std::istringstream in(fields["crontab"]);
    std::vector<std::string> crontab;
    for (std::string field; in >> field;) crontab.push_back(field);
    if (crontab.size() != 5) {
      return Error{"crontab: five fields, minute hour day_of_month month_of_year day_of_week"};
    }
    crontab.push_back(fields.count("timezone") ? fields["timezone"] : "UTC");
    for (int c = celery_beat::kMinute; c <= celery_beat::kCrontabZone; ++c) {
      row[c] = crontab[c - celery_beat::kMinute];
    }
    task.crontab = std::move(crontab);
  } else {
    if (fields.count("timezone")) return Error{"timezone: an interval has no zone"};
    task.every = fields["every"];
    task.period = fields["period"];
    row[celery_beat::kEvery] = task.every;
    row[celery_beat::kPeriod] = task.period;
  }
  auto parsed = celery_beat::ParseTask(row);
  if (!parsed) return Error{parsed.error()};
  if (!parsed->marker) {
    return Error{fmt::format("description: must carry [schedwatch: role={} spec_version={}]",
                             job.role, job.spec_version)};
  }
  if (!*parsed->marker) return Error{"description: " + parsed->marker->error()};
  const Marker& marker = **parsed->marker;
  if (marker.role != job.role) {
    return Error{
        fmt::format("description: the marker's role is {}, not {}", marker.role, job.role)};
  }
  LiveObject object = celery_beat::MakeLiveObject(*parsed, marker, 0);
  if (Drifted(job, object)) {
    return Error{fmt::format(
        "schedule \"{}\" in {}, spec_version {}: not the job's \"{}\" in {}, spec_version {}",
        object.schedule(), object.timezone(), object.spec_version(),
        job.schedule.expression().text(), job.timezone, job.spec_version)};
  }
  return task;
}

class CeleryBeatRepairer : public Repairer {
 public:
  explicit CeleryBeatRepairer(const celery_beat::CeleryBeatSettings& settings)
      : settings_(settings) {}

  Result<bool> Validate(const JobSpec& job, const std::string& text) override {
    auto task = ReadTaskTemplate(text, job);
    if (!task) return Error{task.error()};
    return true;
  }

  Result<Creation> Create(const JobSpec& job, const std::string& text) override {
    auto task = ReadTaskTemplate(text, job);
    if (!task) return Error{task.error()};
    auto dsn = settings_.repair_dsn_file.empty()
                   ? LoadCeleryBeatDsn(settings_.dsn, settings_.dsn_file)
                   : LoadCeleryBeatDsn("", settings_.repair_dsn_file);
    if (!dsn) return Error{dsn.error()};
    auto inserted =
        celery_beat::InsertTask(*dsn, *task, settings_.timeout.value_or(std::chrono::seconds(10)));
    if (!inserted) return Error{inserted.error()};
    const std::string what = fmt::format("periodic task \"{}\"", task->name);
    return Creation{what, !*inserted};
  }

 private:
  celery_beat::CeleryBeatSettings settings_;
};

}  // namespace

Result<std::unique_ptr<Repairer>> MakeCeleryBeatRepairer(const SourceSpec& source) {
  const auto* settings = source.SettingsAs<celery_beat::CeleryBeatSettings>();
  if (settings == nullptr) return Error{"the settings are not a celery_beat source's"};
  return std::unique_ptr<Repairer>(std::make_unique<CeleryBeatRepairer>(*settings));
}

}  // namespace schedwatch
