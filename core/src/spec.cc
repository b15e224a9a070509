#include "schedwatch/spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

#include "schedwatch/classify.h"
#include "schedwatch/duration.h"
#include "schedwatch/maintenance.h"
#include "schedwatch/selector.h"
#include "schedwatch/timefmt.h"
#include "schedwatch/yaml_tree.h"

namespace schedwatch {
namespace {

// Thrown inside the decoder only, after the problem was recorded: what it was decoding (a
// field, a job, a source) cannot go on, the rest of the spec can.
struct Abandon {};

struct Defaults {
  std::string timezone = "UTC";
  std::int64_t start_grace = 5 * 60;
  std::int64_t max_runtime = 30 * 60;
  int missed_starts = 2;
  std::int64_t alert_for = 5 * 60;
  JobAlerting alerting;       // labels and severity every job starts from
  std::set<std::string> set;  // keys the spec's defaults block sets
  // Read in each job's dialect and time zone (MaintenanceWindowsFor), so kept as written.
  std::optional<YamlNode> maintenance;
};

// The keys every job may have; the source types add their own.
const std::vector<std::string>& CommonJobKeys() {
  static const auto* keys = new std::vector<std::string>{
      "role",
      "source",
      "schedule",
      "timezone",
      "spec_version",
      "start_grace",
      "max_runtime",
      "missed_starts",
      "alert_for",
      "stale_after",
      "progress",
      "template",
      "success_metric",
      "runs_dir",
      "labels",
      "severity",
      "min_runtime",
      "failure_threshold",
      "recovery_threshold",
      "maintenance",
      "duration_histogram",
  };
  return *keys;
}

// Prometheus' label name rule: [a-zA-Z_][a-zA-Z0-9_]*.
bool IsLabelName(std::string_view text) {
  if (text.empty() || std::isdigit(static_cast<unsigned char>(text[0]))) return false;
  return std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

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
class FieldPath {
 public:
  FieldPath() = default;
  FieldPath Key(std::string_view key) const { return FieldPath(this, key, 0); }
  FieldPath Index(std::size_t index) const { return FieldPath(this, {}, index); }
  std::string str() const {
    if (parent_ == nullptr) return std::string(key_);
    std::string head = parent_->str();
    if (key_.empty()) return fmt::format("{}[{}]", head, index_);
    return head.empty() ? std::string(key_) : head + "." + std::string(key_);
  }

 private:
  FieldPath(const FieldPath* parent, std::string_view key, std::size_t index)
      : parent_(parent), key_(key), index_(index) {}
  const FieldPath* parent_ = nullptr;
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
  YamlNode node() const { return node_; }

 private:
  friend class Decoder;
  explicit Fields(YamlNode node) : node_(node) {}
  YamlNode node_;
  std::vector<std::pair<std::string_view, YamlNode>> entries_;
};

// Each role's first line, for the duplicate check: a million roles in one string and two arrays
// (a std::map of them cost 100 MB), so that a shard that keeps 1/N of the jobs still checks all.
class RoleLines {
 public:
  // The line of `role`'s first job; nullopt (and `role` added with `line`) when it is new.
  std::optional<int> Add(std::string_view role, int line) {
    if (2 * (lines_.size() + 1) > slots_.size()) Grow();
    std::size_t slot = Find(role);
    if (slots_[slot] != 0) return lines_[slots_[slot] - 1];
    text_.append(role);
    ends_.push_back(text_.size());
    lines_.push_back(line);
    slots_[slot] = static_cast<std::uint32_t>(lines_.size());
    return std::nullopt;
  }

 private:
  std::string_view Role(std::uint32_t index) const {
    std::size_t begin = index == 0 ? 0 : ends_[index - 1];
    return std::string_view(text_).substr(begin, ends_[index] - begin);
  }
  // The slot holding `role`, or the empty one where it goes (open addressing, linear probing).
  std::size_t Find(std::string_view role) const {
    std::size_t mask = slots_.size() - 1;
    for (std::size_t slot = Fnv1a64(role) & mask;; slot = (slot + 1) & mask) {
      if (slots_[slot] == 0 || Role(slots_[slot] - 1) == role) return slot;
    }
  }
  void Grow() {
    std::vector<std::uint32_t> old = std::move(slots_);
    slots_.assign(std::max<std::size_t>(64, 2 * old.size()), 0);
    for (std::uint32_t entry : old) {
      if (entry != 0) slots_[Find(Role(entry - 1))] = entry;
    }
  }

  std::string text_;                  // the roles back to back
  std::vector<std::size_t> ends_;     // where each ends in text_
  std::vector<int> lines_;            // each one's line
  std::vector<std::uint32_t> slots_;  // index + 1 into lines_, 0 for none; a power of two
};

class Decoder {
 public:
  Decoder(std::string file, const SourceCatalog& catalog, const ShardAssignment& keep)
      : file_(std::move(file)), catalog_(catalog), keep_(keep) {
    auto slash = file_.rfind('/');
    directory_ = slash == std::string::npos ? "" : file_.substr(0, slash + 1);
    job_keys_ = CommonJobKeys();
    for (const auto& [type, descriptor] : catalog_.descriptors()) {
      for (const auto& key : descriptor->job_keys()) {
        if (std::find(job_keys_.begin(), job_keys_.end(), key.name) == job_keys_.end()) {
          job_keys_.push_back(key.name);
          typed_job_keys_.emplace_back(key.name, &key);
        }
      }
      // Asked once here, not for every field of every job.
      for (const auto& key : CommonJobKeys()) {
        std::string why = descriptor->RefuseJobKey(key);
        if (!why.empty()) refused_job_keys_[descriptor].emplace_back(key, std::move(why));
      }
      if (descriptor->allows_reboot()) reboot_types_.insert(type);
    }
  }

  // Streaming (YamlDocument::StreamedList): the jobs list starts after `before`, the root's
  // entries so far. Streams when the sources came first, decoding them and the defaults now.
  bool BeginJobs(YamlNode before, Spec& spec) {
    std::optional<YamlNode> sources, defaults;
    for (std::size_t i = 0; before.IsMapping() && i < before.size(); ++i) {
      if (before.key(i).scalar() == "sources") sources = before.value(i);
      if (before.key(i).scalar() == "defaults") defaults = before.value(i);
    }
    if (!sources) return false;
    streamed_ = true;
    defaults_before_jobs_ = defaults.has_value();
    if (defaults)
      Guard([&] { defaults_ = DecodeDefaults(*defaults, FieldPath().Key("defaults")); });
    DecodeSources(*sources, FieldPath().Key("sources"), spec);
    return true;
  }
  void StreamJob(YamlNode item, std::size_t index, Spec& spec) {
    FieldPath path;
    DecodeJobItem(item, path.Key("jobs").Index(index), spec);
  }
  // Defaults written after the streamed jobs came too late for them: the spec must be read
  // again, whole.
  bool NeedsWholeRead() const { return streamed_ && defaults_after_jobs_; }

  Spec Decode(YamlNode root, Spec spec = {}) {
    spec.file = file_;
    std::size_t streamed_problems = problems_.size();
    uncapped_ = streamed_;
    bool whole = Guard([&] { DecodeTop(root, spec); });
    uncapped_ = false;
    if (streamed_) {
      // Reported in the order a whole read reports them: the top level's first, and when it
      // lacks a required key, nothing else.
      if (!whole) {
        problems_.erase(problems_.begin(), problems_.begin() + streamed_problems);
        dropped_ = 0;
      }
      std::rotate(problems_.begin(), problems_.begin() + (whole ? streamed_problems : 0),
                  problems_.end());
      if (problems_.size() > kMaxSpecProblems) {
        dropped_ += problems_.size() - kMaxSpecProblems;
        problems_.resize(kMaxSpecProblems);
      }
    }
    if (keep_.Sharded()) spec.whole_spec_roles = roles_;
    // The jobs' source names are interned (kept for good) only for a spec that is kept: a
    // rejected one, reloaded again and again with new names, leaves nothing behind.
    if (problems_.empty()) {
      for (std::size_t i = 0; i < spec.jobs.size(); ++i) spec.jobs[i].source = *job_sources_[i];
    }
    return spec;
  }

  // Every problem, one per line in file order; empty when there was none.
  std::string Problems() {
    std::stable_sort(problems_.begin(), problems_.end(), [](const auto& a, const auto& b) {
      return std::tie(a.line, a.column) < std::tie(b.line, b.column);
    });
    std::string out;
    for (const auto& problem : problems_) {
      if (!out.empty()) out += '\n';
      out += problem.message;
    }
    if (dropped_ > 0) out += fmt::format("\n{}: {} more problems not shown", file_, dropped_);
    return out;
  }

 private:
  friend class FieldsReader;

  void DecodeTop(YamlNode root, Spec& spec) {
    FieldPath top_path;
    if (root.IsNull()) {
      Fail(root, top_path, "the file is empty; expected a mapping with version, sources and jobs");
    }
    Fields top = Check(root, top_path, {"version", "defaults", "sources", "jobs"},
                       {"version", "sources", "jobs"});
    Guard([&] {
      YamlNode version = top.At("version");
      if (Scalar(version, top_path.Key("version")) != "1") {
        Report(
            version, top_path.Key("version"),
            fmt::format("unsupported format version {}; this build reads 1", version.Describe()));
      }
    });
    if (streamed_) {
      defaults_after_jobs_ = top.Find("defaults") && !defaults_before_jobs_;
      Expect(top.At("jobs"), YamlNode::Kind::kSequence, top_path.Key("jobs"));
      return;
    }
    if (auto node = top.Find("defaults")) {
      Guard([&] { defaults_ = DecodeDefaults(*node, top_path.Key("defaults")); });
    }
    DecodeSources(top.At("sources"), top_path.Key("sources"), spec);
    DecodeJobs(top.At("jobs"), top_path.Key("jobs"), spec);
  }

  // Runs `decode`; a problem it gives up on is already recorded.
  template <typename Decode>
  static bool Guard(Decode decode) {
    try {
      decode();
      return true;
    } catch (const Abandon&) {
      return false;
    }
  }

  void Report(YamlNode node, const FieldPath& path, std::string_view message) {
    std::string field = path.str();
    std::string text = fmt::format("{}:{}:{}: {}{}{}", file_, node.line(), node.column(), field,
                                   field.empty() ? "" : ": ", message);
    // The defaults' windows are read once per dialect: a problem they share is said once.
    if (std::any_of(problems_.begin(), problems_.end(),
                    [&](const Problem& seen) { return seen.message == text; })) {
      return;
    }
    if (problems_.size() >= kMaxSpecProblems && !uncapped_) {
      ++dropped_;
      return;
    }
    problems_.push_back({node.line(), node.column(), std::move(text)});
  }

  [[noreturn]] void Fail(YamlNode node, const FieldPath& path, std::string_view message) {
    Report(node, path, message);
    throw Abandon{};
  }

  Fields Check(YamlNode node, const FieldPath& path, std::initializer_list<std::string_view> known,
               std::initializer_list<std::string_view> required) {
    std::vector<std::string> names(known.begin(), known.end());
    return Check(node, path, names, std::vector<std::string>(required.begin(), required.end()));
  }

  // Reports every unknown, duplicate and missing key. Gives up on the mapping when a required
  // key is missing and `give_up_on_missing` (its decoder reads them unchecked).
  Fields Check(YamlNode node, const FieldPath& path, const std::vector<std::string>& known,
               const std::vector<std::string>& required, bool give_up_on_missing = true) {
    Expect(node, YamlNode::Kind::kMapping, path);
    Fields fields(node);
    fields.entries_.reserve(node.size());
    for (std::size_t i = 0; i < node.size(); ++i) {
      YamlNode key = node.key(i);
      Expect(key, YamlNode::Kind::kScalar, path);
      std::string_view name = key.scalar();
      if (std::find(known.begin(), known.end(), name) == known.end()) {
        Report(key, path.Key(name), fmt::format("unknown key (known keys: {})", JoinKeys(known)));
      } else if (fields.Find(name)) {
        Report(key, path.Key(name), "duplicate key");
      } else {
        fields.entries_.emplace_back(name, node.value(i));
      }
    }
    bool missing = false;
    for (const auto& name : required) {
      if (!fields.Find(name)) {
        Report(node, path.Key(name), "missing required key");
        missing = true;
      }
    }
    if (missing && give_up_on_missing) throw Abandon{};
    return fields;
  }

  void Expect(YamlNode node, YamlNode::Kind kind, const FieldPath& path) {
    if (node.kind() == kind) return;
    const char* wanted = kind == YamlNode::Kind::kMapping    ? "a mapping"
                         : kind == YamlNode::Kind::kSequence ? "a list"
                                                             : "a single value";
    Fail(node, path, fmt::format("expected {}, got {}", wanted, node.Describe()));
  }

  // systemd OnCalendar= expressions: one, or a list of them (a timer may have several).
  Schedule CalendarSchedule(YamlNode node, const FieldPath& path, const std::string& timezone) {
    if (node.IsScalar() && node.scalar() == kMonotonicSchedule) {
      return Schedule::Monotonic(FindZone(timezone));
    }
    std::vector<std::pair<YamlNode, FieldPath>> items;
    if (node.kind() == YamlNode::Kind::kSequence) {
      if (node.size() == 0) {
        Fail(node, path,
             "an empty list: give at least one OnCalendar expression, or \"monotonic\" for a "
             "timer without OnCalendar=");
      }
      for (std::size_t i = 0; i < node.size(); ++i) items.emplace_back(node.item(i), path.Index(i));
    } else {
      items.emplace_back(node, path);
    }
    std::vector<CalendarSpec> calendars;
    bool broken = false;
    for (const auto& [item, item_path] : items) {
      auto calendar = CalendarSpec::Parse(Scalar(item, item_path));
      if (!calendar) {
        Report(item, item_path, calendar.error());
        broken = true;
      } else {
        calendars.push_back(std::move(*calendar));
      }
    }
    if (broken) throw Abandon{};
    return Schedule(std::move(calendars), FindZone(timezone));
  }

  std::string Scalar(YamlNode node, const FieldPath& path) {
    Expect(node, YamlNode::Kind::kScalar, path);
    return std::string(node.scalar());
  }

  std::int64_t Duration(YamlNode node, const FieldPath& path,
                        std::int64_t max_seconds = kMaxDurationSeconds) {
    auto parsed = ParseDuration(Scalar(node, path), max_seconds);
    if (!parsed) Fail(node, path, parsed.error());
    return *parsed;
  }

  std::int64_t PositiveDuration(YamlNode node, const FieldPath& path,
                                std::int64_t max_seconds = kMaxDurationSeconds) {
    std::int64_t seconds = Duration(node, path, max_seconds);
    if (seconds <= 0) Fail(node, path, "must be longer than 0s");
    return seconds;
  }

  std::int64_t WholeNumber(YamlNode node, const FieldPath& path, std::int64_t min,
                           std::int64_t max) {
    std::string text = Scalar(node, path);
    std::int64_t value = 0;
    bool digits =
        !text.empty() && text.size() < 18 &&
        std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (digits) value = std::stoll(text);
    if (!digits || value < min || value > max) {
      Fail(node, path,
           fmt::format("expected a whole number from {} to {}, got {}", min, max, node.Describe()));
    }
    return value;
  }

  bool Boolean(YamlNode node, const FieldPath& path) {
    std::string text = Scalar(node, path);
    if (text != "true" && text != "false") {
      Fail(node, path, fmt::format("expected true or false, got {}", node.Describe()));
    }
    return text == "true";
  }

  int PositiveInt(YamlNode node, const FieldPath& path, int max) {
    return static_cast<int>(WholeNumber(node, path, 1, max));
  }

  std::string Zone(YamlNode node, const FieldPath& path) {
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

  // `labels:` over `base` (the defaults'), by name.
  LabelPairs Labels(YamlNode node, const FieldPath& path, LabelPairs base) {
    Expect(node, YamlNode::Kind::kMapping, path);
    std::set<std::string, std::less<>> seen;
    for (std::size_t i = 0; i < node.size(); ++i) {
      YamlNode key = node.key(i);
      Guard([&] {
        std::string name = Scalar(key, path);
        FieldPath field = path.Key(key.scalar());
        if (!seen.insert(name).second) Fail(key, field, "duplicate key");
        if (name.rfind("__", 0) == 0) {
          Fail(key, field, "label names beginning with \"__\" are Prometheus' own");
        }
        if (!IsLabelName(name)) {
          Fail(key, field,
               fmt::format("\"{}\" is not a Prometheus label name (letters, digits and '_', not "
                           "starting with a digit)",
                           name));
        }
        if (std::find(kReservedLabelNames.begin(), kReservedLabelNames.end(), name) !=
            kReservedLabelNames.end()) {
          Fail(key, field,
               fmt::format("\"{}\" is a label schedwatch or Prometheus sets itself (reserved: {})",
                           name, JoinKeys(kReservedLabelNames)));
        }
        std::string value = Scalar(node.value(i), field);
        if (value.empty()) {
          Fail(node.value(i), field,
               "empty; a label with an empty value is no label to Prometheus");
        }
        if (value.size() > kMaxLabelValue) {
          Fail(node.value(i), field, fmt::format("longer than {} characters", kMaxLabelValue));
        }
        auto at = std::find_if(base.begin(), base.end(),
                               [&](const auto& entry) { return entry.first == name; });
        if (at != base.end()) {
          at->second = std::move(value);
        } else {
          base.emplace_back(std::move(name), std::move(value));
        }
      });
    }
    if (base.size() > kMaxLabels) {
      Fail(node, path,
           fmt::format("{} labels; at most {} (with those of the defaults)", base.size(),
                       kMaxLabels));
    }
    std::sort(base.begin(), base.end());
    return base;
  }

  // `severity:` one level for every alert kind, or a mapping of kinds to levels, over `base`.
  LabelPairs Severity(YamlNode node, const FieldPath& path, LabelPairs base) {
    auto level = [&](YamlNode value, const FieldPath& field) {
      std::string text = Scalar(value, field);
      if (std::find(kSeverityLevels.begin(), kSeverityLevels.end(), text) ==
          kSeverityLevels.end()) {
        Fail(value, field,
             fmt::format("unknown level \"{}\" (levels: {})", text, JoinKeys(kSeverityLevels)));
      }
      return text;
    };
    auto set = [&base](std::string_view kind, const std::string& value) {
      auto at = std::find_if(base.begin(), base.end(),
                             [&](const auto& entry) { return entry.first == kind; });
      if (at != base.end()) {
        at->second = value;
      } else {
        base.emplace_back(std::string(kind), value);
      }
    };
    if (node.IsScalar()) {
      std::string all = level(node, path);
      for (auto kind : kAlertKinds) set(kind, all);
    } else {
      std::vector<std::string> kinds(kAlertKinds.begin(), kAlertKinds.end());
      Fields fields = Check(node, path, kinds, {});
      for (const auto& [kind, value] : fields.entries()) {
        Guard([&, &kind = kind, &value = value] { set(kind, level(value, path.Key(kind))); });
      }
    }
    std::sort(base.begin(), base.end());
    return base;
  }

  // failure_threshold, recovery_threshold, min_runtime and duration_histogram, into `alerting`.
  // A threshold counts runs of the history a role keeps, so it is at most that long.
  void Tuning(std::string_view key, YamlNode value, const FieldPath& field, JobAlerting& alerting) {
    constexpr int kMaxThreshold = static_cast<int>(kRunHistoryKept);
    if (key == "failure_threshold") {
      alerting.failure_threshold = PositiveInt(value, field, kMaxThreshold);
    }
    if (key == "recovery_threshold") {
      alerting.recovery_threshold = PositiveInt(value, field, kMaxThreshold);
    }
    if (key == "min_runtime") alerting.min_runtime = PositiveDuration(value, field);
    if (key == "duration_histogram") alerting.duration_histogram = Boolean(value, field);
  }

  // `maintenance:`, its schedules read as `descriptor`'s jobs' in `timezone`.
  MaintenanceWindows Windows(YamlNode node, const FieldPath& path,
                             const SourceDescriptor& descriptor, const std::string& timezone) {
    Expect(node, YamlNode::Kind::kSequence, path);
    if (node.size() > kMaxWindows) {
      Fail(node, path, fmt::format("{} windows; at most {}", node.size(), kMaxWindows));
    }
    MaintenanceWindows windows;
    for (std::size_t i = 0; i < node.size(); ++i) {
      Guard([&] { windows.push_back(Window(node.item(i), path.Index(i), descriptor, timezone)); });
    }
    return windows;
  }

  MaintenanceWindow Window(YamlNode node, const FieldPath& path, const SourceDescriptor& descriptor,
                           const std::string& timezone) {
    Fields fields = Check(node, path, {"from", "to", "schedule", "duration"}, {});
    bool fixed = fields.Find("from") || fields.Find("to");
    bool recurring = fields.Find("schedule") || fields.Find("duration");
    if (fixed == recurring) {
      Fail(node, path,
           "a window is either {from, to} (RFC 3339 times) or {schedule, duration}, not "
           "both or neither");
    }
    auto required = [&](std::string_view key, std::string_view other) {
      auto value = fields.Find(key);
      if (!value) {
        Fail(node, path.Key(key),
             fmt::format("missing required key (a window with {} needs {})", other, key));
      }
      return *value;
    };
    MaintenanceWindow window;
    if (fixed) {
      YamlNode from = required("from", "to"), to = required("to", "from");
      window.fixed = {Time(from, path.Key("from")), Time(to, path.Key("to"))};
      if (window.fixed.end <= window.fixed.start) {
        Fail(to, path.Key("to"),
             fmt::format("{} is not after from {}", FormatRfc3339(window.fixed.end),
                         FormatRfc3339(window.fixed.start)));
      }
      window.text = fmt::format("{} to {}", FormatRfc3339(window.fixed.start),
                                FormatRfc3339(window.fixed.end));
      return window;
    }
    YamlNode schedule_node = required("schedule", "duration");
    YamlNode duration_node = required("duration", "schedule");
    FieldPath schedule_path = path.Key("schedule");
    Schedule schedule;
    if (descriptor.dialect() == CronDialect::kSystemdCalendar) {
      auto calendar = CalendarSpec::Parse(Scalar(schedule_node, schedule_path));
      if (!calendar) {
        Fail(schedule_node, schedule_path,
             fmt::format("{} (a systemd job reads its windows' schedules as OnCalendar=)",
                         calendar.error()));
      }
      std::vector<CalendarSpec> calendars;
      calendars.push_back(std::move(*calendar));
      schedule = Schedule(std::move(calendars), FindZone(timezone));
    } else {
      auto expression =
          CronExpression::Parse(Scalar(schedule_node, schedule_path), descriptor.dialect());
      if (!expression) Fail(schedule_node, schedule_path, expression.error());
      schedule = Schedule(std::move(*expression), FindZone(timezone), descriptor.dst_policy());
    }
    auto period = schedule.Period(kPeriodReference);
    if (!period) {
      Fail(schedule_node, schedule_path,
           fmt::format("\"{}\" opens no windows: it has no fire times", schedule.text()));
    }
    window.duration = PositiveDuration(duration_node, path.Key("duration"));
    if (window.duration >= *period) {
      Fail(duration_node, path.Key("duration"),
           fmt::format("{} is not shorter than the longest gap between the schedule's fire times "
                       "({}): the windows would never close",
                       FormatDuration(window.duration), FormatDuration(*period)));
    }
    window.text = fmt::format("{} for {}", schedule.text(), FormatDuration(window.duration));
    window.opens = std::make_shared<const Schedule>(std::move(schedule));
    return window;
  }

  std::int64_t Time(YamlNode node, const FieldPath& path) {
    std::string text = Scalar(node, path);
    auto time = ParseRfc3339(text);
    if (!time) {
      Fail(node, path,
           fmt::format("\"{}\" is not an RFC 3339 time such as 2026-12-05T01:00:00Z", text));
    }
    return *time;
  }

  // The defaults' windows as `descriptor`'s jobs in `timezone` read them: once per dialect and
  // zone, however many jobs share them.
  const MaintenanceWindows& DefaultWindows(YamlNode node, const SourceDescriptor& descriptor,
                                           const std::string& timezone) {
    auto key = std::make_pair(&descriptor, timezone);
    auto known = default_windows_.find(key);
    if (known != default_windows_.end()) return known->second;
    MaintenanceWindows windows;
    Guard([&] {
      windows = Windows(node, FieldPath().Key("defaults").Key("maintenance"), descriptor, timezone);
    });
    return default_windows_.emplace(key, std::move(windows)).first->second;
  }

  // JoinTooMany, once for each set of windows however many jobs have it.
  bool WindowsJoinTooMany(const MaintenanceWindows& windows) {
    for (const auto& [known, too_many] : joined_checked_) {
      if (known == windows) return too_many;
    }
    bool too_many = JoinTooMany(windows, kPeriodReference);
    if (joined_checked_.size() < kMaxInterned) joined_checked_.emplace_back(windows, too_many);
    return too_many;
  }

  // Jobs with equal labels and severity share one JobAlerting; none at all shares null.
  std::shared_ptr<const JobAlerting> Intern(JobAlerting alerting) {
    if (alerting.empty()) return nullptr;
    for (const auto& known : alertings_) {
      if (*known == alerting) return known;
    }
    if (alertings_.size() >= kMaxInterned) {
      return std::make_shared<const JobAlerting>(std::move(alerting));
    }
    return alertings_.emplace_back(std::make_shared<const JobAlerting>(std::move(alerting)));
  }

  Defaults DecodeDefaults(YamlNode node, const FieldPath& path) {
    Defaults defaults;
    Fields fields = Check(node, path,
                          {"timezone", "start_grace", "max_runtime", "missed_starts", "alert_for",
                           "labels", "severity", "failure_threshold", "recovery_threshold",
                           "min_runtime", "maintenance", "duration_histogram"},
                          {});
    for (const auto& [key, value] : fields.entries()) {
      FieldPath field = path.Key(key);
      defaults.set.insert(std::string(key));
      Guard([&, &key = key, &value = value] {
        if (key == "timezone") defaults.timezone = Zone(value, field);
        if (key == "start_grace") defaults.start_grace = Duration(value, field);
        if (key == "max_runtime") defaults.max_runtime = PositiveDuration(value, field);
        if (key == "missed_starts") defaults.missed_starts = PositiveInt(value, field, 1000);
        if (key == "alert_for") defaults.alert_for = Duration(value, field);
        if (key == "labels") defaults.alerting.labels = Labels(value, field, {});
        if (key == "severity") defaults.alerting.severity = Severity(value, field, {});
        Tuning(key, value, field, defaults.alerting);
        if (key == "maintenance") defaults.maintenance = value;
      });
    }
    return defaults;
  }

  void DecodeSources(YamlNode node, const FieldPath& path, Spec& spec) {
    bool usable = Guard([&] {
      Expect(node, YamlNode::Kind::kMapping, path);
      if (node.size() == 0) Fail(node, path, "at least one source is needed");
    });
    if (!usable) {
      sources_unusable_ = true;  // the jobs' references cannot be checked
      return;
    }
    for (std::size_t i = 0; i < node.size(); ++i) {
      Guard([&] {
        std::string name = Scalar(node.key(i), path);
        FieldPath source_path = path.Key(node.key(i).scalar());
        if (!IsName(name, true)) {
          broken_sources_.insert(name);
          Fail(node.key(i), source_path,
               "a source name must start with a letter or digit and contain only letters, "
               "digits, '.', '-' and '_' (at most 63 characters)");
        }
        if (spec.sources.count(name) || broken_sources_.count(name)) {
          Fail(node.key(i), source_path, "duplicate source");
        }
        broken_sources_.insert(name);  // until it is decoded
        spec.sources.emplace(name, DecodeSource(node.value(i), name, source_path));
        broken_sources_.erase(name);
      });
    }
  }

  SourceSpec DecodeSource(YamlNode node, const std::string& name, const FieldPath& path);
  void DecodeJobs(YamlNode node, const FieldPath& path, Spec& spec);
  void DecodeJobItem(YamlNode node, const FieldPath& path, Spec& spec);
  bool DecodeJob(YamlNode node, const FieldPath& path, const Defaults& defaults, const Spec& spec,
                 JobSpec& job);

  std::string file_;
  std::string directory_;
  const SourceCatalog& catalog_;
  ShardAssignment keep_;  // whose jobs are kept; all are checked
  Defaults defaults_;
  RoleLines roles_seen_;
  std::size_t roles_ = 0;  // valid jobs, kept or not
  bool streamed_ = false, defaults_before_jobs_ = false, defaults_after_jobs_ = false;
  bool uncapped_ = false;              // the top level of a streamed spec, ordered and capped after
  std::vector<std::string> job_keys_;  // the common ones, then each type's
  std::vector<std::pair<std::string, const JobKey*>> typed_job_keys_;  // of some type only
  std::map<const SourceDescriptor*, std::vector<std::pair<std::string, std::string>>>
      refused_job_keys_;  // common job keys a type refuses, with why
  std::set<std::string> reboot_types_;
  bool sources_unusable_ = false;
  std::set<std::string, std::less<>> broken_sources_;  // jobs naming them are not checked
  struct Problem {
    int line, column;
    std::string message;
  };
  std::vector<Problem> problems_;
  std::size_t dropped_ = 0;
  // Distinct labels/severity settings seen so far; past kMaxInterned (a spec giving nearly every
  // job its own), jobs keep their own copy rather than searched for.
  std::vector<std::shared_ptr<const JobAlerting>> alertings_;
  // Each kept job's source name (a key of the spec's sources), in job order, and the one
  // DecodeJob found last.
  std::vector<const std::string*> job_sources_;
  const std::string* job_source_ = nullptr;
  std::map<std::pair<const SourceDescriptor*, std::string>, MaintenanceWindows> default_windows_;
  std::vector<std::pair<MaintenanceWindows, bool>> joined_checked_;
  // Cron schedules by text, dialect, zone and DST policy: jobs of one schedule share its parts.
  std::map<std::tuple<std::string, CronDialect, const date::time_zone*, DstPolicy>, Schedule>
      schedules_;
  Schedule SharedSchedule(Schedule schedule) {
    const CronExpression& expression = schedule.expression();
    auto key = std::make_tuple(expression.text(), expression.dialect(), schedule.zone(),
                               schedule.policy());
    return schedules_.emplace(std::move(key), std::move(schedule)).first->second;
  }
  static constexpr std::size_t kMaxInterned = 256;
  static constexpr std::size_t kMaxWindows = 16;
  static constexpr std::size_t kMaxLabels = 16;
  static constexpr std::size_t kMaxLabelValue = 256;
};

// A descriptor's view of one mapping: its source block, or a job's keys.
class FieldsReader : public SettingsReader {
 public:
  FieldsReader(Decoder& decoder, const Fields& fields, const FieldPath& path)
      : decoder_(decoder), fields_(fields), path_(path) {}

  bool Has(std::string_view key) const override { return fields_.Find(key).has_value(); }

  std::optional<std::string> String(std::string_view key) override {
    return Get<std::string>(
        key, [&](YamlNode value, const FieldPath& field) { return decoder_.Scalar(value, field); });
  }

  std::optional<std::string> Path(std::string_view key) override {
    auto text = String(key);
    if (text) *text = decoder_.ResolvePath(*text);
    return text;
  }

  std::optional<std::vector<std::string>> List(std::string_view key) override {
    return Get<std::vector<std::string>>(key, [&](YamlNode value, const FieldPath& field) {
      std::vector<std::string> values;
      if (value.IsScalar()) {
        values.push_back(decoder_.Scalar(value, field));
      } else {
        decoder_.Expect(value, YamlNode::Kind::kSequence, field);
        for (std::size_t i = 0; i < value.size(); ++i) {
          values.push_back(decoder_.Scalar(value.item(i), field.Index(i)));
        }
      }
      return values;
    });
  }

  std::optional<std::vector<std::string>> PathList(std::string_view key) override {
    auto values = List(key);
    if (values) {
      for (auto& value : *values) value = decoder_.ResolvePath(value);
    }
    return values;
  }

  std::optional<bool> Bool(std::string_view key) override {
    return Get<bool>(key, [&](YamlNode value, const FieldPath& field) {
      return decoder_.Boolean(value, field);
    });
  }

  std::optional<std::int64_t> Integer(std::string_view key, std::int64_t min,
                                      std::int64_t max) override {
    return Get<std::int64_t>(key, [&](YamlNode value, const FieldPath& field) {
      return decoder_.WholeNumber(value, field, min, max);
    });
  }

  std::optional<std::chrono::seconds> Wait(std::string_view key) override {
    return Get<std::chrono::seconds>(key, [&](YamlNode value, const FieldPath& field) {
      return std::chrono::seconds(decoder_.PositiveDuration(value, field, kMaxWaitSeconds));
    });
  }

  void Problem(std::string_view key, std::string_view message) override {
    auto value = fields_.Find(key);
    decoder_.Report(value ? *value : fields_.node(), path_.Key(key), message);
  }

  void ItemProblem(std::string_view key, std::size_t index, std::string_view message) override {
    auto value = fields_.Find(key);
    if (!value || !value->IsSequence() || index >= value->size()) return Problem(key, message);
    FieldPath field = path_.Key(key);
    decoder_.Report(value->item(index), field.Index(index), message);
  }

 private:
  template <typename T, typename Read>
  std::optional<T> Get(std::string_view key, Read read) {
    auto value = fields_.Find(key);
    if (!value) return std::nullopt;
    std::optional<T> out;
    Decoder::Guard([&] { out = read(*value, path_.Key(key)); });
    return out;
  }

  Decoder& decoder_;
  const Fields& fields_;
  const FieldPath& path_;
};

SourceSpec Decoder::DecodeSource(YamlNode node, const std::string& name, const FieldPath& path) {
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
  const SourceDescriptor* descriptor = catalog_.Find(source.type);
  if (descriptor == nullptr) {
    Fail(*type_node, path.Key("type"),
         fmt::format("unknown source type \"{}\" (known types: {})", source.type,
                     JoinKeys(catalog_.Types())));
  }
  std::vector<std::string> known{"type"}, required;
  for (const auto& key : descriptor->settings_keys()) {
    known.push_back(key.name);
    if (key.required) required.push_back(key.name);
  }
  // A missing setting is one more problem; the descriptor still checks the others.
  Fields fields = Check(node, path, known, required, /*give_up_on_missing=*/false);
  FieldsReader reader(*this, fields, path);
  source.settings = descriptor->DecodeSettings(reader);
  return source;
}

void Decoder::DecodeJobs(YamlNode node, const FieldPath& path, Spec& spec) {
  if (!Guard([&] { Expect(node, YamlNode::Kind::kSequence, path); })) return;
  if (!keep_.Sharded()) spec.jobs.reserve(node.size());
  for (std::size_t i = 0; i < node.size(); ++i) DecodeJobItem(node.item(i), path.Index(i), spec);
}

void Decoder::DecodeJobItem(YamlNode node, const FieldPath& path, Spec& spec) {
  // Decoded in place: a JobSpec is large, and there may be 1,000,000.
  JobSpec& added = spec.jobs.emplace_back();
  bool decoded = false;
  Guard([&] { decoded = DecodeJob(node, path, defaults_, spec, added); });
  if (!decoded) {
    spec.jobs.pop_back();
    return;
  }
  if (auto first = roles_seen_.Add(added.role, added.line)) {
    Report(node, path.Key("role"),
           fmt::format("duplicate role \"{}\" (first defined on line {})", added.role, *first));
    spec.jobs.pop_back();
    return;
  }
  ++roles_;
  if (!keep_.Owns(added.role)) {
    spec.jobs.pop_back();
    return;
  }
  job_sources_.push_back(job_source_);
}

bool Decoder::DecodeJob(YamlNode node, const FieldPath& path, const Defaults& defaults,
                        const Spec& spec, JobSpec& job) {
  Fields fields = Check(node, path, job_keys_, {"role", "source", "schedule", "spec_version"});
  job.line = node.line();
  Guard([&] {
    job.role = Scalar(fields.At("role"), path.Key("role"));
    if (!IsName(job.role, false)) {
      Report(fields.At("role"), path.Key("role"),
             fmt::format("role \"{}\" must start with a letter or digit and contain only "
                         "letters, digits, '-' and '_' (at most 63 characters)",
                         job.role));
    }
  });
  // Not yet job.source: interned only once the whole spec is valid (Decode).
  const std::string source_name = Scalar(fields.At("source"), path.Key("source"));
  auto source = spec.sources.find(source_name);
  if (source == spec.sources.end()) {
    // A source that is itself wrong was reported already; its jobs are checked once it is not.
    if (sources_unusable_ || broken_sources_.count(source_name)) return false;
    std::vector<std::string> names;
    for (const auto& entry : spec.sources) names.push_back(entry.first);
    for (const auto& name : broken_sources_) names.push_back(name);
    std::sort(names.begin(), names.end());
    Fail(fields.At("source"), path.Key("source"),
         fmt::format("unknown source \"{}\" (defined sources: {})", source_name, JoinKeys(names)));
  }
  job_source_ = &source->first;
  const SourceDescriptor& descriptor = *catalog_.Find(source->second.type);
  job.source_type = source->second.type;
  Guard([&] {
    job.spec_version = Scalar(fields.At("spec_version"), path.Key("spec_version"));
    if (job.spec_version.empty())
      Report(fields.At("spec_version"), path.Key("spec_version"), "empty");
  });

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
    Guard([&] { job.timezone = Zone(*zone, path.Key("timezone")); });
    job.origins.timezone = ValueOrigin::kJob;
  }
  YamlNode schedule_node = fields.At("schedule");
  bool scheduled = Guard([&] {
    if (descriptor.dialect() == CronDialect::kSystemdCalendar) {
      job.schedule = CalendarSchedule(schedule_node, path.Key("schedule"), job.timezone);
      return;
    }
    std::string text = Scalar(schedule_node, path.Key("schedule"));
    if (text == kMonotonicSchedule) {
      Fail(schedule_node, path.Key("schedule"),
           "\"monotonic\" (a timer without OnCalendar=) is only allowed for systemd sources");
    }
    auto expression = CronExpression::Parse(text, descriptor.dialect());
    if (!expression) Fail(schedule_node, path.Key("schedule"), expression.error());
    if (expression->is_reboot() && !descriptor.allows_reboot()) {
      Fail(schedule_node, path.Key("schedule"),
           fmt::format("@reboot has no fire times and is only allowed for {} sources",
                       JoinKeys(reboot_types_)));
    }
    job.schedule = SharedSchedule(
        Schedule(std::move(*expression), FindZone(job.timezone), descriptor.dst_policy()));
  });

  job.start_grace = defaults.start_grace;
  job.max_runtime = defaults.max_runtime;
  job.missed_starts = defaults.missed_starts;
  job.alert_for = defaults.alert_for;
  JobAlerting alerting = defaults.alerting;
  auto refusals = refused_job_keys_.find(&descriptor);
  std::vector<std::string_view> refused;
  for (const auto& [key, value] : fields.entries()) {
    FieldPath field = path.Key(key);
    if (refusals != refused_job_keys_.end()) {
      auto why = std::find_if(refusals->second.begin(), refusals->second.end(),
                              [&, &key = key](const auto& entry) { return entry.first == key; });
      if (why != refusals->second.end()) {
        Report(value, field, why->second);
        refused.push_back(key);
        continue;
      }
    }
    auto typed = std::find_if(typed_job_keys_.begin(), typed_job_keys_.end(),
                              [&, &key = key](const auto& entry) { return entry.first == key; });
    if (typed != typed_job_keys_.end()) {
      const auto& own = descriptor.job_keys();
      bool mine = std::any_of(own.begin(), own.end(),
                              [&, &key = key](const JobKey& entry) { return entry.name == key; });
      if (!mine) Report(value, field, typed->second->elsewhere);
      continue;
    }
    Guard([&, &key = key, &value = value] {
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
      if (key == "labels") alerting.labels = Labels(value, field, alerting.labels);
      if (key == "severity") alerting.severity = Severity(value, field, alerting.severity);
      Tuning(key, value, field, alerting);
      if (key == "template") job.MutableExtras().template_path = ResolvePath(Scalar(value, field));
      if (key == "success_metric") {
        std::string metric = Scalar(value, field);
        if (auto selector = ParseSelector(metric); !selector) {
          Fail(value, field,
               fmt::format("\"{}\" is not a PromQL series selector: {}", metric, selector.error()));
        }
        job.MutableExtras().success_metric = std::move(metric);
      }
      if (key == "progress") {
        Fields progress = Check(value, field, {"file", "stale_after"}, {"file", "stale_after"});
        job.MutableExtras().progress =
            ProgressSpec{ResolvePath(Scalar(progress.At("file"), field.Key("file"))),
                         PositiveDuration(progress.At("stale_after"), field.Key("stale_after"))};
      }
    });
  }
  // schedwatch_run's records: `<runs_dir>/<role>`, the job's key before its source's.
  std::string runs_dir = source->second.settings ? source->second.settings->runs_dir : "";
  if (auto value = fields.Find("runs_dir");
      value && std::find(refused.begin(), refused.end(), "runs_dir") == refused.end()) {
    Guard([&] {
      runs_dir = Scalar(*value, path.Key("runs_dir"));
      if (runs_dir.empty()) Fail(*value, path.Key("runs_dir"), "empty");
      runs_dir = ResolvePath(runs_dir);
    });
  }
  if (!runs_dir.empty()) job.MutableExtras().runs_dir = runs_dir + "/" + job.role;
  if (defaults.maintenance) {
    alerting.maintenance = DefaultWindows(*defaults.maintenance, descriptor, job.timezone);
  }
  if (auto value = fields.Find("maintenance");
      value && std::find(refused.begin(), refused.end(), "maintenance") == refused.end()) {
    Guard([&] {
      MaintenanceWindows own = Windows(*value, path.Key("maintenance"), descriptor, job.timezone);
      alerting.maintenance.insert(alerting.maintenance.end(), own.begin(), own.end());
    });
  }
  if (!alerting.maintenance.empty() && WindowsJoinTooMany(alerting.maintenance)) {
    auto own = fields.Find("maintenance");
    Report(own ? *own : *defaults.maintenance,
           own ? path.Key("maintenance") : FieldPath().Key("defaults").Key("maintenance"),
           fmt::format("the windows join into a downtime of more than {} windows in a row: they "
                       "would hold the alerts for good (give fewer, longer windows)",
                       kMaxJoinedWindows));
  }
  if (alerting.min_runtime >= job.max_runtime) {
    // Reported where the job sets one of the two, else on the job (both from the defaults).
    auto at = fields.Find("min_runtime");
    if (!at) at = fields.Find("max_runtime");
    Report(at ? *at : node, path.Key("min_runtime"),
           fmt::format("min_runtime {} is not shorter than max_runtime {}: no run could succeed",
                       FormatDuration(alerting.min_runtime), FormatDuration(job.max_runtime)));
  }
  job.alerting = Intern(std::move(alerting));
  FieldsReader reader(*this, fields, path);
  descriptor.DecodeJob(reader, job);
  if (source->second.settings) {
    job.start_grace += descriptor.StartLatency(*source->second.settings);
  }
  for (const auto& key : descriptor.job_keys()) {
    if (key.required && !fields.Find(key.name)) {
      Report(node, path.Key(key.name),
             key.missing_hint.empty() ? std::string("missing required key")
                                      : fmt::format("missing required key ({})", key.missing_hint));
    }
  }
  if (!scheduled) return false;
  if (job.schedule.is_monotonic()) {
    // No fire times to derive a period, and so stale_after, from: the spec says it.
    if (!fields.Find("stale_after")) {
      Fail(node, path.Key("stale_after"),
           "missing required key (a monotonic schedule has no fire times to derive it from)");
    }
    return true;
  }
  job.period = job.schedule.Period(kPeriodReference);
  if (!job.period && job.schedule.is_calendar()) {
    Fail(schedule_node, path.Key("schedule"),
         fmt::format("fires fewer than twice after {}: a job needs a period",
                     FormatRfc3339(kPeriodReference)));
  }
  if (!job.period && !job.schedule.expression().is_reboot()) {
    Fail(schedule_node, path.Key("schedule"),
         fmt::format("\"{}\" never fires", job.schedule.expression().text()));
  }
  if (!job.stale_after && job.period) job.stale_after = 2 * *job.period + job.max_runtime;
  return true;
}

}  // namespace

const JobExtras& JobSpec::Extras() const {
  static const JobExtras none;
  return extras ? *extras : none;
}

JobExtras& JobSpec::MutableExtras() {
  // A copy each time, so that a spec copied before never sees the change.
  auto own = extras ? std::make_shared<JobExtras>(*extras) : std::make_shared<JobExtras>();
  extras = own;
  return *own;
}

const JobSpec* Spec::FindJob(std::string_view role) const {
  for (const auto& job : jobs) {
    if (job.role == role) return &job;
  }
  return nullptr;
}

namespace {

// Parses the text `open` reads, its jobs streamed when `stream` (see Decoder::BeginJobs); sets
// `*again` when the spec must be read again unstreamed.
Result<Spec> ReadSpec(const SpecOpener& open, std::size_t size_hint, const std::string& file,
                      const SourceCatalog& catalog, const ShardAssignment& keep, bool stream,
                      bool* again) {
  Decoder decoder(file, catalog, keep);
  Spec spec;
  YamlDocument::StreamedList jobs{
      "jobs", [&](YamlNode before) { return decoder.BeginJobs(before, spec); },
      [&](YamlNode item, std::size_t index) { decoder.StreamJob(item, index, spec); }};
  auto document = stream ? YamlDocument::Parse(open(), size_hint, jobs)
                         : YamlDocument::Parse(open(), size_hint);
  if (!document) return Error{fmt::format("{}:{}", file, document.error())};
  // What follows a second "---" would be dropped without a word: refused instead.
  if (const auto& second = document->second_document()) {
    return Error{fmt::format("{}:{}:{}: a second YAML document; a spec is one document", file,
                             second->line, second->column)};
  }
  spec = decoder.Decode(document->root(), std::move(spec));
  if (decoder.NeedsWholeRead()) {
    *again = true;
    return Error{""};
  }
  std::string problems = decoder.Problems();
  if (!problems.empty()) return Error{std::move(problems)};
  // Grown by doubling as the jobs streamed in: up to half of it spare, for as long as the spec is
  // served (100,000 jobs: 6.5 MB).
  spec.jobs.shrink_to_fit();
  return spec;
}

}  // namespace

Result<Spec> ParseSpec(std::string_view text, const std::string& file, const SourceCatalog& catalog,
                       const ShardAssignment& keep) {
  return ParseSpec([text] { return YamlDocument::TextReader(text); }, text.size(), file, catalog,
                   keep);
}

Result<Spec> ParseSpec(const SpecOpener& open, std::size_t size_hint, const std::string& file,
                       const SourceCatalog& catalog, const ShardAssignment& keep) {
  bool again = false;
  auto spec = ReadSpec(open, size_hint, file, catalog, keep, true, &again);
  if (!again) return spec;
  return ReadSpec(open, size_hint, file, catalog, keep, false, &again);
}

}  // namespace schedwatch
