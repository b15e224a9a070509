#include "schedwatch/spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <sstream>

#include "schedwatch/duration.h"
#include "schedwatch/platform/file.h"
#include "schedwatch/selector.h"
#include "schedwatch/yaml_tree.h"
#include "spec_sources.h"

namespace schedwatch {
namespace {

// Thrown inside the decoder only; ParseSpec turns it into an Error.
struct SpecProblem {
  std::string message;
};

struct Defaults {
  std::string timezone = "UTC";
  std::int64_t start_grace = 5 * 60;
  std::int64_t max_runtime = 30 * 60;
  int missed_starts = 2;
  std::int64_t alert_for = 5 * 60;
  std::set<std::string> set;  // keys the spec's defaults block sets
};

bool IsName(std::string_view text, bool allow_dot) {
  if (text.empty() || text.size() > 63 || !std::isalnum(static_cast<unsigned char>(text[0]))) {
    return false;
  }
  return std::all_of(text.begin(), text.end(), [&](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ||
           (allow_dot && c == '.');
  });
}

template <typename Names>
std::string JoinKeys(const Names& keys) {
  std::string out;
  for (const auto& key : keys) {
    if (!out.empty()) out += ", ";
    out += key;
  }
  return out;
}

// A field path such as jobs[2].progress.file, spelled out only when an error needs it.
class Path {
 public:
  Path() = default;
  Path Key(std::string_view key) const { return Path(this, key, 0); }
  Path Index(std::size_t index) const { return Path(this, {}, index); }
  std::string str() const {
    if (parent_ == nullptr) return std::string(key_);
    std::string head = parent_->str();
    if (key_.empty()) return fmt::format("{}[{}]", head, index_);
    return head.empty() ? std::string(key_) : head + "." + std::string(key_);
  }

 private:
  Path(const Path* parent, std::string_view key, std::size_t index)
      : parent_(parent), key_(key), index_(index) {}
  const Path* parent_ = nullptr;
  std::string_view key_;
  std::size_t index_ = 0;
};

// The entries of one mapping, checked against its known and required keys.
class Fields {
 public:
  std::optional<YamlNode> Find(std::string_view key) const {
    for (const auto& [name, value] : entries_) {
      if (name == key) return value;
    }
    return std::nullopt;
  }
  YamlNode At(std::string_view key) const { return *Find(key); }  // for required keys
  const std::vector<std::pair<std::string_view, YamlNode>>& entries() const { return entries_; }

 private:
  friend class Decoder;
  std::vector<std::pair<std::string_view, YamlNode>> entries_;
};

class Decoder {
 public:
  explicit Decoder(std::string file) : file_(std::move(file)) {
    auto slash = file_.rfind('/');
    directory_ = slash == std::string::npos ? "" : file_.substr(0, slash + 1);
  }

  Spec Decode(YamlNode root) {
    Path top_path;
    if (root.IsNull()) {
      Fail(root, top_path, "the file is empty; expected a mapping with version, sources and jobs");
    }
    Fields top = Check(root, top_path, {"version", "defaults", "sources", "jobs"},
                       {"version", "sources", "jobs"});
    Spec spec;
    spec.file = file_;
    YamlNode version = top.At("version");
    if (Scalar(version, top_path.Key("version")) != "1") {
      Fail(version, top_path.Key("version"),
           fmt::format("unsupported format version {}; this build reads 1", version.Describe()));
    }
    Defaults defaults;
    if (auto node = top.Find("defaults"))
      defaults = DecodeDefaults(*node, top_path.Key("defaults"));
    DecodeSources(top.At("sources"), top_path.Key("sources"), spec);
    DecodeJobs(top.At("jobs"), top_path.Key("jobs"), defaults, spec);
    return spec;
  }

 private:
  [[noreturn]] void Fail(YamlNode node, const Path& path, const std::string& message) {
    std::string field = path.str();
    throw SpecProblem{fmt::format("{}:{}:{}: {}{}{}", file_, node.line(), node.column(), field,
                                  field.empty() ? "" : ": ", message)};
  }

  Fields Check(YamlNode node, const Path& path, std::initializer_list<std::string_view> known,
               std::initializer_list<std::string_view> required) {
    std::vector<std::string> names(known.begin(), known.end());
    return Check(node, path, names, std::vector<std::string>(required.begin(), required.end()));
  }

  Fields Check(YamlNode node, const Path& path, const std::vector<std::string>& known,
               const std::vector<std::string>& required) {
    Expect(node, YamlNode::Kind::kMapping, path);
    Fields fields;
    fields.entries_.reserve(node.size());
    for (std::size_t i = 0; i < node.size(); ++i) {
      YamlNode key = node.key(i);
      Expect(key, YamlNode::Kind::kScalar, path);
      std::string_view name = key.scalar();
      if (std::find(known.begin(), known.end(), name) == known.end()) {
        Fail(key, path.Key(name), fmt::format("unknown key (known keys: {})", JoinKeys(known)));
      }
      if (fields.Find(name)) Fail(key, path.Key(name), "duplicate key");
      fields.entries_.emplace_back(name, node.value(i));
    }
    for (const auto& name : required) {
      if (!fields.Find(name)) Fail(node, path.Key(name), "missing required key");
    }
    return fields;
  }

  void Expect(YamlNode node, YamlNode::Kind kind, const Path& path) {
    if (node.kind() == kind) return;
    const char* wanted = kind == YamlNode::Kind::kMapping    ? "a mapping"
                         : kind == YamlNode::Kind::kSequence ? "a list"
                                                             : "a single value";
    Fail(node, path, fmt::format("expected {}, got {}", wanted, node.Describe()));
  }

  std::string Scalar(YamlNode node, const Path& path) {
    Expect(node, YamlNode::Kind::kScalar, path);
    return std::string(node.scalar());
  }

  std::int64_t Duration(YamlNode node, const Path& path,
                        std::int64_t max_seconds = kMaxDurationSeconds) {
    auto parsed = ParseDuration(Scalar(node, path), max_seconds);
    if (!parsed) Fail(node, path, parsed.error());
    return *parsed;
  }

  std::int64_t PositiveDuration(YamlNode node, const Path& path,
                                std::int64_t max_seconds = kMaxDurationSeconds) {
    std::int64_t seconds = Duration(node, path, max_seconds);
    if (seconds <= 0) Fail(node, path, "must be longer than 0s");
    return seconds;
  }

  int PositiveInt(YamlNode node, const Path& path, int max) {
    std::string text = Scalar(node, path);
    int value = 0;
    bool digits =
        !text.empty() && text.size() < 9 &&
        std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (digits) value = std::stoi(text);
    if (!digits || value < 1 || value > max) {
      Fail(node, path,
           fmt::format("expected a whole number from 1 to {}, got {}", max, node.Describe()));
    }
    return value;
  }

  std::string Zone(YamlNode node, const Path& path) {
    std::string name = Scalar(node, path);
    if (FindZone(name) == nullptr) {
      Fail(node, path,
           fmt::format("unknown time zone \"{}\" (use an IANA name such as Europe/Berlin or UTC)",
                       name));
    }
    return name;
  }

  std::string ResolvePath(const std::string& path) const {
    if (path.empty() || path[0] == '/' || path[0] == '~') return path;
    return directory_ + path;
  }

  Defaults DecodeDefaults(YamlNode node, const Path& path) {
    Defaults defaults;
    Fields fields = Check(
        node, path, {"timezone", "start_grace", "max_runtime", "missed_starts", "alert_for"}, {});
    for (const auto& [key, value] : fields.entries()) {
      Path field = path.Key(key);
      defaults.set.insert(std::string(key));
      if (key == "timezone") defaults.timezone = Zone(value, field);
      if (key == "start_grace") defaults.start_grace = Duration(value, field);
      if (key == "max_runtime") defaults.max_runtime = PositiveDuration(value, field);
      if (key == "missed_starts") defaults.missed_starts = PositiveInt(value, field, 1000);
      if (key == "alert_for") defaults.alert_for = Duration(value, field);
    }
    return defaults;
  }

  void DecodeSources(YamlNode node, const Path& path, Spec& spec) {
    Expect(node, YamlNode::Kind::kMapping, path);
    if (node.size() == 0) Fail(node, path, "at least one source is needed");
    for (std::size_t i = 0; i < node.size(); ++i) {
      std::string name = Scalar(node.key(i), path);
      Path source_path = path.Key(node.key(i).scalar());
      if (!IsName(name, true)) {
        Fail(node.key(i), source_path,
             "a source name must start with a letter or digit and contain only letters, digits, "
             "'.', '-' and '_' (at most 63 characters)");
      }
      if (spec.sources.count(name)) Fail(node.key(i), source_path, "duplicate source");
      spec.sources.emplace(name, DecodeSource(node.value(i), name, source_path));
    }
  }

  SourceSpec DecodeSource(YamlNode node, const std::string& name, const Path& path) {
    Expect(node, YamlNode::Kind::kMapping, path);
    SourceSpec source;
    source.name = name;
    source.line = node.line();
    // The type decides which keys are known, so read it first.
    std::optional<YamlNode> type_node;
    for (std::size_t i = 0; i < node.size(); ++i) {
      if (node.key(i).IsScalar() && node.key(i).scalar() == "type") type_node = node.value(i);
    }
    if (!type_node) Fail(node, path.Key("type"), "missing required key");
    source.type = Scalar(*type_node, path.Key("type"));
    const auto& table = SourceKeyTable();
    auto type = table.find(source.type);
    if (type == table.end()) {
      Fail(*type_node, path.Key("type"),
           fmt::format("unknown source type \"{}\" (known types: {})", source.type,
                       JoinKeys(SourceTypes())));
    }
    std::vector<std::string> known{"type"}, required;
    for (const auto& key : type->second) {
      known.push_back(key.name);
      if (key.required) required.push_back(key.name);
    }
    Fields fields = Check(node, path, known, required);
    for (const auto& key : type->second) {
      auto value = fields.Find(key.name);
      if (!value) continue;
      Path field = path.Key(key.name);
      std::vector<std::string>& values = source.settings[key.name];
      switch (key.kind) {
        case SourceKey::kList:
        case SourceKey::kPathList:
          if (value->IsScalar()) {
            values.push_back(Scalar(*value, field));
          } else {
            Expect(*value, YamlNode::Kind::kSequence, field);
            for (std::size_t i = 0; i < value->size(); ++i) {
              values.push_back(Scalar(value->item(i), field.Index(i)));
            }
          }
          break;
        case SourceKey::kDuration:  // timeouts and intervals of the exporter's own loop
          values.push_back(std::to_string(PositiveDuration(*value, field, kMaxWaitSeconds)));
          break;
        case SourceKey::kBool: {
          std::string text = Scalar(*value, field);
          if (text != "true" && text != "false") {
            Fail(*value, field, fmt::format("expected true or false, got {}", value->Describe()));
          }
          values.push_back(text);
          break;
        }
        default:
          values.push_back(Scalar(*value, field));
      }
      if (key.kind == SourceKey::kPath || key.kind == SourceKey::kPathList) {
        for (auto& path_value : values) path_value = ResolvePath(path_value);
      }
    }
    if (source.type == "github_actions") {
      std::string repository = source.Get("repository");
      auto slash = repository.find('/');
      if (slash == std::string::npos || slash == 0 || slash + 1 == repository.size() ||
          repository.find('/', slash + 1) != std::string::npos) {
        Fail(fields.At("repository"), path.Key("repository"),
             fmt::format("expected owner/name, got \"{}\"", repository));
      }
    }
    if (auto it = source.settings.find("runs_dir");
        it != source.settings.end() && (it->second.empty() || it->second.front().empty())) {
      Fail(fields.At("runs_dir"), path.Key("runs_dir"), "empty");
    }
    if (source.type == "crontab") {
      std::string history = source.Get("history", "syslog");
      if (history != "syslog" && history != "journal") {
        Fail(fields.At("history"), path.Key("history"),
             fmt::format("expected syslog or journal, got \"{}\"", history));
      }
    }
    return source;
  }

  void DecodeJobs(YamlNode node, const Path& path, const Defaults& defaults, Spec& spec) {
    Expect(node, YamlNode::Kind::kSequence, path);
    std::set<std::string_view> roles;
    spec.jobs.reserve(node.size());
    for (std::size_t i = 0; i < node.size(); ++i) {
      Path job_path = path.Index(i);
      spec.jobs.push_back(DecodeJob(node.item(i), job_path, defaults, spec));
      const JobSpec& job = spec.jobs.back();
      if (!roles.insert(job.role).second) {
        Fail(node.item(i), job_path.Key("role"),
             fmt::format("duplicate role \"{}\" (first defined on line {})", job.role,
                         spec.FindJob(job.role)->line));
      }
    }
  }

  JobSpec DecodeJob(YamlNode node, const Path& path, const Defaults& defaults, const Spec& spec) {
    Fields fields =
        Check(node, path,
              {"role", "source", "schedule", "timezone", "spec_version", "start_grace",
               "max_runtime", "missed_starts", "alert_for", "stale_after", "progress", "template",
               "workflow", "success_metric", "runs_dir", "require_concurrency"},
              {"role", "source", "schedule", "spec_version"});
    JobSpec job;
    job.line = node.line();
    job.role = Scalar(fields.At("role"), path.Key("role"));
    if (!IsName(job.role, false)) {
      Fail(fields.At("role"), path.Key("role"),
           fmt::format("role \"{}\" must start with a letter or digit and contain only letters, "
                       "digits, '-' and '_' (at most 63 characters)",
                       job.role));
    }
    job.source = Scalar(fields.At("source"), path.Key("source"));
    auto source = spec.sources.find(job.source);
    if (source == spec.sources.end()) {
      std::vector<std::string> names;
      for (const auto& entry : spec.sources) names.push_back(entry.first);
      Fail(fields.At("source"), path.Key("source"),
           fmt::format("unknown source \"{}\" (defined sources: {})", job.source, JoinKeys(names)));
    }
    job.source_type = source->second.type;
    job.spec_version = Scalar(fields.At("spec_version"), path.Key("spec_version"));
    if (job.spec_version.empty())
      Fail(fields.At("spec_version"), path.Key("spec_version"), "empty");

    auto origin = [&defaults](const char* key) {
      return defaults.set.count(key) ? ValueOrigin::kDefaults : ValueOrigin::kBuiltIn;
    };
    job.origins.timezone = origin("timezone");
    job.origins.start_grace = origin("start_grace");
    job.origins.max_runtime = origin("max_runtime");
    job.origins.missed_starts = origin("missed_starts");
    job.origins.alert_for = origin("alert_for");
    job.timezone = defaults.timezone;
    if (auto zone = fields.Find("timezone")) {
      job.timezone = Zone(*zone, path.Key("timezone"));
      job.origins.timezone = ValueOrigin::kJob;
    }
    bool crontab = job.source_type == "crontab";
    CronDialect dialect = crontab                               ? CronDialect::kDebianCron
                          : job.source_type == "kubernetes"     ? CronDialect::kKubernetes
                          : job.source_type == "github_actions" ? CronDialect::kGitHubActions
                                                                : CronDialect::kDebianCron;
    YamlNode schedule_node = fields.At("schedule");
    auto expression = CronExpression::Parse(Scalar(schedule_node, path.Key("schedule")), dialect);
    if (!expression) Fail(schedule_node, path.Key("schedule"), expression.error());
    if (expression && expression->is_reboot() && !crontab) {
      Fail(schedule_node, path.Key("schedule"),
           "@reboot has no fire times and is only allowed for crontab sources");
    }
    job.schedule = Schedule(std::move(*expression), FindZone(job.timezone),
                            crontab ? DstPolicy::kVixieCron : DstPolicy::kWallClock);

    job.start_grace = defaults.start_grace;
    job.max_runtime = defaults.max_runtime;
    job.missed_starts = defaults.missed_starts;
    job.alert_for = defaults.alert_for;
    for (const auto& [key, value] : fields.entries()) {
      Path field = path.Key(key);
      if (key == "start_grace") job.start_grace = Duration(value, field);
      if (key == "max_runtime") job.max_runtime = PositiveDuration(value, field);
      if (key == "missed_starts") job.missed_starts = PositiveInt(value, field, 1000);
      if (key == "alert_for") job.alert_for = Duration(value, field);
      if (key == "start_grace") job.origins.start_grace = ValueOrigin::kJob;
      if (key == "max_runtime") job.origins.max_runtime = ValueOrigin::kJob;
      if (key == "missed_starts") job.origins.missed_starts = ValueOrigin::kJob;
      if (key == "alert_for") job.origins.alert_for = ValueOrigin::kJob;
      if (key == "stale_after") job.origins.stale_after = ValueOrigin::kJob;
      if (key == "stale_after") {
        job.stale_after = PositiveDuration(value, field);
        job.stale_after_overridden = true;
      }
      if (key == "template") job.template_path = ResolvePath(Scalar(value, field));
      if (key == "success_metric") {
        job.success_metric = Scalar(value, field);
        if (auto selector = ParseSelector(job.success_metric); !selector) {
          Fail(value, field,
               fmt::format("\"{}\" is not a PromQL series selector: {}", job.success_metric,
                           selector.error()));
        }
      }
      if (key == "progress") {
        Fields progress = Check(value, field, {"file", "stale_after"}, {"file", "stale_after"});
        job.progress =
            ProgressSpec{ResolvePath(Scalar(progress.At("file"), field.Key("file"))),
                         PositiveDuration(progress.At("stale_after"), field.Key("stale_after"))};
      }
      if (key == "workflow") {
        if (job.source_type != "github_actions") {
          Fail(value, field, "only github_actions jobs name a workflow file");
        }
        job.workflow = Scalar(value, field);
      }
    }
    // schedwatch_run's records: `<runs_dir>/<role>`, the job's key before its source's.
    std::string runs_dir = source->second.Get("runs_dir");
    if (auto value = fields.Find("runs_dir")) {
      if (job.source_type == "github_actions") {
        Fail(*value, path.Key("runs_dir"),
             "github_actions runs happen on GitHub's runners, where the exporter cannot read "
             "run records; use the workflow's concurrency: group (require_concurrency: true)");
      }
      runs_dir = Scalar(*value, path.Key("runs_dir"));
      if (runs_dir.empty()) Fail(*value, path.Key("runs_dir"), "empty");
      runs_dir = ResolvePath(runs_dir);
    }
    if (!runs_dir.empty()) job.runs_dir = runs_dir + "/" + job.role;
    if (auto value = fields.Find("require_concurrency")) {
      std::string text = Scalar(*value, path.Key("require_concurrency"));
      if (text != "true" && text != "false") {
        Fail(*value, path.Key("require_concurrency"),
             fmt::format("expected true or false, got {}", value->Describe()));
      }
      if (job.source_type != "github_actions") {
        Fail(*value, path.Key("require_concurrency"),
             "only github_actions jobs have a workflow concurrency: group (other jobs use "
             "schedwatch_run's guard)");
      }
      job.require_concurrency = text == "true";
    }
    if (job.source_type == "github_actions" && job.workflow.empty()) {
      Fail(node, path.Key("workflow"),
           "missing required key (github_actions jobs name their workflow file, e.g. "
           ".github/workflows/report.yml)");
    }
    job.period = job.schedule.Period(kPeriodReference);
    if (!job.period && !job.schedule.expression().is_reboot()) {
      Fail(schedule_node, path.Key("schedule"),
           fmt::format("\"{}\" never fires", job.schedule.expression().text()));
    }
    if (!job.stale_after && job.period) job.stale_after = 2 * *job.period + job.max_runtime;
    return job;
  }

  std::string file_;
  std::string directory_;
};

}  // namespace

std::string SourceSpec::Get(const std::string& key, const std::string& fallback) const {
  auto it = settings.find(key);
  return it == settings.end() || it->second.empty() ? fallback : it->second.front();
}

const std::vector<std::string>& SourceSpec::GetList(const std::string& key) const {
  static const std::vector<std::string> kEmpty;
  auto it = settings.find(key);
  return it == settings.end() ? kEmpty : it->second;
}

bool SourceSpec::GetBool(const std::string& key) const { return Get(key) == "true"; }

const JobSpec* Spec::FindJob(std::string_view role) const {
  for (const auto& job : jobs) {
    if (job.role == role) return &job;
  }
  return nullptr;
}

Result<Spec> ParseSpec(std::string_view text, const std::string& file) {
  auto document = YamlDocument::Parse(text);
  if (!document) return Error{fmt::format("{}:{}", file, document.error())};
  try {
    return Decoder(file).Decode(document->root());
  } catch (const SpecProblem& problem) {
    return Error{problem.message};
  }
}

Result<Spec> LoadSpecFile(const std::string& path) {
  auto text = platform::ReadRegularFile(path, kMaxSpecBytes);
  if (!text) return Error{text.error()};
  return ParseSpec(*text, path);
}

const std::vector<std::string>* SourceTypeKeys(std::string_view type) {
  static const auto* keys = [] {
    auto* out = new std::map<std::string, std::vector<std::string>, std::less<>>;
    for (const auto& [name, entries] : SourceKeyTable()) {
      for (const auto& key : entries) (*out)[name].push_back(key.name);
    }
    return out;
  }();
  auto it = keys->find(type);
  return it == keys->end() ? nullptr : &it->second;
}

std::vector<std::string> SourceTypes() {
  std::vector<std::string> types;
  for (const auto& entry : SourceKeyTable()) types.push_back(entry.first);
  return types;
}

}  // namespace schedwatch
