#include "schedwatch/spec.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "schedwatch/duration.h"
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

std::string JoinKeys(const std::vector<std::string>& keys) {
  std::string out;
  for (const auto& key : keys) out += (out.empty() ? "" : ", ") + key;
  return out;
}

class Decoder {
 public:
  explicit Decoder(std::string file) : file_(std::move(file)) {
    auto slash = file_.rfind('/');
    directory_ = slash == std::string::npos ? "" : file_.substr(0, slash + 1);
  }

  Spec Decode(YamlNode root) {
    if (root.IsNull()) {
      Fail(root, "", "the file is empty; expected a mapping with version, sources and jobs");
    }
    auto top = Fields(root, "", {"version", "defaults", "sources", "jobs"},
                      {"version", "sources", "jobs"});
    Spec spec;
    spec.file = file_;
    YamlNode version = top.at("version");
    if (Scalar(version, "version") != "1") {
      Fail(version, "version",
           fmt::format("unsupported format version {}; this build reads 1", version.Describe()));
    }
    Defaults defaults;
    if (auto it = top.find("defaults"); it != top.end()) defaults = DecodeDefaults(it->second);
    DecodeSources(top.at("sources"), spec);
    DecodeJobs(top.at("jobs"), defaults, spec);
    return spec;
  }

 private:
  [[noreturn]] void Fail(YamlNode node, const std::string& path, const std::string& message) {
    throw SpecProblem{fmt::format("{}:{}:{}: {}{}{}", file_, node.line(), node.column(), path,
                                  path.empty() ? "" : ": ", message)};
  }

  // Checks a mapping's keys against `known` and `required`; returns key -> value node.
  std::map<std::string, YamlNode> Fields(YamlNode node, const std::string& path,
                                         const std::vector<std::string>& known,
                                         const std::vector<std::string>& required) {
    Expect(node, YamlNode::Kind::kMapping, path);
    std::map<std::string, YamlNode> fields;
    for (std::size_t i = 0; i < node.size(); ++i) {
      YamlNode key = node.key(i);
      std::string name(Scalar(key, path));
      std::string field = path.empty() ? name : path + "." + name;
      if (std::find(known.begin(), known.end(), name) == known.end()) {
        Fail(key, field, fmt::format("unknown key (known keys: {})", JoinKeys(known)));
      }
      if (!fields.emplace(name, node.value(i)).second) Fail(key, field, "duplicate key");
    }
    for (const auto& name : required) {
      if (!fields.count(name)) {
        Fail(node, path.empty() ? name : path + "." + name, "missing required key");
      }
    }
    return fields;
  }

  void Expect(YamlNode node, YamlNode::Kind kind, const std::string& path) {
    if (node.kind() == kind) return;
    const char* wanted = kind == YamlNode::Kind::kMapping    ? "a mapping"
                         : kind == YamlNode::Kind::kSequence ? "a list"
                                                             : "a single value";
    Fail(node, path, fmt::format("expected {}, got {}", wanted, node.Describe()));
  }

  std::string Scalar(YamlNode node, const std::string& path) {
    Expect(node, YamlNode::Kind::kScalar, path);
    return std::string(node.scalar());
  }

  std::int64_t Duration(YamlNode node, const std::string& path) {
    auto parsed = ParseDuration(Scalar(node, path));
    if (!parsed) Fail(node, path, parsed.error());
    return *parsed;
  }

  std::int64_t PositiveDuration(YamlNode node, const std::string& path) {
    std::int64_t seconds = Duration(node, path);
    if (seconds <= 0) Fail(node, path, "must be longer than 0s");
    return seconds;
  }

  int PositiveInt(YamlNode node, const std::string& path, int max) {
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

  std::string Zone(YamlNode node, const std::string& path) {
    std::string name = Scalar(node, path);
    if (FindZone(name) == nullptr) {
      Fail(node, path,
           fmt::format("unknown time zone \"{}\" (use an IANA name such as "
                       "Europe/Berlin or UTC)",
                       name));
    }
    return name;
  }

  std::string ResolvePath(const std::string& path) const {
    if (path.empty() || path[0] == '/' || path[0] == '~') return path;
    return directory_ + path;
  }

  Defaults DecodeDefaults(YamlNode node) {
    Defaults defaults;
    auto fields =
        Fields(node, "defaults",
               {"timezone", "start_grace", "max_runtime", "missed_starts", "alert_for"}, {});
    for (const auto& [key, value] : fields) {
      std::string path = "defaults." + key;
      if (key == "timezone") defaults.timezone = Zone(value, path);
      if (key == "start_grace") defaults.start_grace = Duration(value, path);
      if (key == "max_runtime") defaults.max_runtime = PositiveDuration(value, path);
      if (key == "missed_starts") defaults.missed_starts = PositiveInt(value, path, 1000);
      if (key == "alert_for") defaults.alert_for = Duration(value, path);
    }
    return defaults;
  }

  void DecodeSources(YamlNode node, Spec& spec) {
    Expect(node, YamlNode::Kind::kMapping, "sources");
    if (node.size() == 0) Fail(node, "sources", "at least one source is needed");
    for (std::size_t i = 0; i < node.size(); ++i) {
      std::string name = Scalar(node.key(i), "sources");
      std::string path = "sources." + name;
      if (!IsName(name, true)) {
        Fail(node.key(i), path,
             "a source name must start with a letter or digit and contain only letters, digits, "
             "'.', '-' and '_' (at most 63 characters)");
      }
      if (spec.sources.count(name)) Fail(node.key(i), path, "duplicate source");
      spec.sources.emplace(name, DecodeSource(node.value(i), name, path));
    }
  }

  SourceSpec DecodeSource(YamlNode node, const std::string& name, const std::string& path) {
    Expect(node, YamlNode::Kind::kMapping, path);
    SourceSpec source;
    source.name = name;
    source.line = node.line();
    // The type decides which keys are known, so read it first.
    std::optional<YamlNode> type_node;
    for (std::size_t i = 0; i < node.size(); ++i) {
      if (node.key(i).IsScalar() && node.key(i).scalar() == "type") type_node = node.value(i);
    }
    if (!type_node) Fail(node, path + ".type", "missing required key");
    source.type = Scalar(*type_node, path + ".type");
    const auto& table = SourceKeyTable();
    auto type = table.find(source.type);
    if (type == table.end()) {
      Fail(*type_node, path + ".type",
           fmt::format("unknown source type \"{}\" (known types: {})", source.type,
                       JoinKeys(SourceTypes())));
    }
    std::vector<std::string> known{"type"}, required;
    for (const auto& key : type->second) {
      known.push_back(key.name);
      if (key.required) required.push_back(key.name);
    }
    auto fields = Fields(node, path, known, required);
    for (const auto& key : type->second) {
      auto it = fields.find(key.name);
      if (it == fields.end()) continue;
      std::string field = path + "." + key.name;
      std::vector<std::string>& values = source.settings[key.name];
      switch (key.kind) {
        case SourceKey::kList:
        case SourceKey::kPathList:
          if (it->second.IsScalar()) {
            values.push_back(Scalar(it->second, field));
          } else {
            Expect(it->second, YamlNode::Kind::kSequence, field);
            for (std::size_t i = 0; i < it->second.size(); ++i) {
              values.push_back(Scalar(it->second.item(i), fmt::format("{}[{}]", field, i)));
            }
          }
          break;
        case SourceKey::kDuration:
          values.push_back(std::to_string(PositiveDuration(it->second, field)));
          break;
        case SourceKey::kBool: {
          std::string text = Scalar(it->second, field);
          if (text != "true" && text != "false") {
            Fail(it->second, field,
                 fmt::format("expected true or false, got {}", it->second.Describe()));
          }
          values.push_back(text);
          break;
        }
        default:
          values.push_back(Scalar(it->second, field));
      }
      if (key.kind == SourceKey::kPath || key.kind == SourceKey::kPathList) {
        for (auto& value : values) value = ResolvePath(value);
      }
    }
    if (source.type == "github_actions") {
      std::string repository = source.Get("repository");
      auto slash = repository.find('/');
      if (slash == std::string::npos || slash == 0 || slash + 1 == repository.size() ||
          repository.find('/', slash + 1) != std::string::npos) {
        Fail(fields.at("repository"), path + ".repository",
             fmt::format("expected owner/name, got \"{}\"", repository));
      }
    }
    if (source.type == "crontab") {
      std::string history = source.Get("history", "syslog");
      if (history != "syslog" && history != "journal") {
        Fail(fields.at("history"), path + ".history",
             fmt::format("expected syslog or journal, got \"{}\"", history));
      }
    }
    return source;
  }

  void DecodeJobs(YamlNode node, const Defaults& defaults, Spec& spec) {
    Expect(node, YamlNode::Kind::kSequence, "jobs");
    std::set<std::string_view> roles;
    spec.jobs.reserve(node.size());
    for (std::size_t i = 0; i < node.size(); ++i) {
      spec.jobs.push_back(DecodeJob(node.item(i), fmt::format("jobs[{}]", i), defaults, spec));
      const JobSpec& job = spec.jobs.back();
      if (!roles.insert(job.role).second) {
        const JobSpec* first = spec.FindJob(job.role);
        Fail(
            node.item(i), fmt::format("jobs[{}].role", i),
            fmt::format("duplicate role \"{}\" (first defined on line {})", job.role, first->line));
      }
    }
  }

  JobSpec DecodeJob(YamlNode node, const std::string& path, const Defaults& defaults,
                    const Spec& spec) {
    auto fields = Fields(node, path,
                         {"role", "source", "schedule", "timezone", "spec_version", "start_grace",
                          "max_runtime", "missed_starts", "alert_for", "stale_after", "progress",
                          "template", "workflow", "success_metric"},
                         {"role", "source", "schedule", "spec_version"});
    JobSpec job;
    job.line = node.line();
    job.role = Scalar(fields.at("role"), path + ".role");
    if (!IsName(job.role, false)) {
      Fail(fields.at("role"), path + ".role",
           fmt::format("role \"{}\" must start with a letter or digit and contain only letters, "
                       "digits, '-' and '_' (at most 63 characters)",
                       job.role));
    }
    job.source = Scalar(fields.at("source"), path + ".source");
    auto source = spec.sources.find(job.source);
    if (source == spec.sources.end()) {
      std::vector<std::string> names;
      for (const auto& entry : spec.sources) names.push_back(entry.first);
      Fail(fields.at("source"), path + ".source",
           fmt::format("unknown source \"{}\" (defined sources: {})", job.source, JoinKeys(names)));
    }
    job.source_type = source->second.type;
    job.spec_version = Scalar(fields.at("spec_version"), path + ".spec_version");
    if (job.spec_version.empty()) Fail(fields.at("spec_version"), path + ".spec_version", "empty");

    job.timezone = defaults.timezone;
    if (auto it = fields.find("timezone"); it != fields.end()) {
      job.timezone = Zone(it->second, path + ".timezone");
    }
    bool crontab = job.source_type == "crontab";
    YamlNode schedule_node = fields.at("schedule");
    auto expression = CronExpression::Parse(Scalar(schedule_node, path + ".schedule"), crontab);
    if (!expression) Fail(schedule_node, path + ".schedule", expression.error());
    job.schedule = Schedule(std::move(*expression), FindZone(job.timezone),
                            crontab ? DstPolicy::kVixieCron : DstPolicy::kWallClock);

    job.start_grace = defaults.start_grace;
    job.max_runtime = defaults.max_runtime;
    job.missed_starts = defaults.missed_starts;
    job.alert_for = defaults.alert_for;
    for (const auto& [key, value] : fields) {
      std::string field = path + "." + key;
      if (key == "start_grace") job.start_grace = Duration(value, field);
      if (key == "max_runtime") job.max_runtime = PositiveDuration(value, field);
      if (key == "missed_starts") job.missed_starts = PositiveInt(value, field, 1000);
      if (key == "alert_for") job.alert_for = Duration(value, field);
      if (key == "stale_after") {
        job.stale_after = PositiveDuration(value, field);
        job.stale_after_overridden = true;
      }
      if (key == "template") job.template_path = ResolvePath(Scalar(value, field));
      if (key == "success_metric") job.success_metric = Scalar(value, field);
      if (key == "progress") {
        auto progress = Fields(value, field, {"file", "stale_after"}, {"file", "stale_after"});
        job.progress =
            ProgressSpec{ResolvePath(Scalar(progress.at("file"), field + ".file")),
                         PositiveDuration(progress.at("stale_after"), field + ".stale_after")};
      }
      if (key == "workflow") {
        if (job.source_type != "github_actions") {
          Fail(value, field, "only github_actions jobs name a workflow file");
        }
        job.workflow = Scalar(value, field);
      }
    }
    if (job.source_type == "github_actions" && job.workflow.empty()) {
      Fail(node, path + ".workflow",
           "missing required key (github_actions jobs name their workflow file, e.g. "
           ".github/workflows/report.yml)");
    }
    job.period = job.schedule.Period(kPeriodReference);
    if (!job.period && !job.schedule.expression().is_reboot()) {
      Fail(schedule_node, path + ".schedule",
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
  struct stat info {};
  if (stat(path.c_str(), &info) != 0) {
    return Error{fmt::format("{}: cannot read the spec: {}", path, std::strerror(errno))};
  }
  if (S_ISDIR(info.st_mode)) return Error{fmt::format("{}: is a directory, not a spec file", path)};
  if (static_cast<std::size_t>(info.st_size) > kMaxSpecBytes) {
    return Error{fmt::format("{}: the spec is {} bytes, larger than the {} MiB limit", path,
                             info.st_size, kMaxSpecBytes >> 20)};
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{fmt::format("{}: cannot read the spec: {}", path, std::strerror(errno))};
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.size() > kMaxSpecBytes) {
    return Error{
        fmt::format("{}: the spec is larger than the {} MiB limit", path, kMaxSpecBytes >> 20)};
  }
  return ParseSpec(text, path);
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
