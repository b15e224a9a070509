#include "sources/file/file_source.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "schedwatch/duration.h"
#include "schedwatch/platform/file.h"
#include "schedwatch/timefmt.h"
#include "schedwatch/yaml_tree.h"
#include "sources/file/file_descriptor.h"
#include "sources/problems.h"

namespace schedwatch {
namespace {

constexpr std::size_t kMaxSnapshotBytes = 256u << 20;
constexpr const char* kEmptyHint = " (a scheduler with nothing is objects: [])";

std::optional<std::int64_t> ParseTime(std::string_view text, std::int64_t now) {
  if (text == "now") return now;
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) {
    auto offset = ParseDuration(text.substr(1));
    if (!offset) return std::nullopt;
    return text[0] == '-' ? now - *offset : now + *offset;
  }
  return ParseRfc3339(text);
}

// The scalar fields of one list item, or a problem naming what is wrong.
class Item {
 public:
  Item(YamlNode node, std::string what) : node_(node), what_(std::move(what)) {
    if (!node.IsMapping())
      problem_ = fmt::format("{} is {}, not a mapping", what_, node.DescribeShape());
  }

  std::string Text(std::string_view key, bool required) {
    if (!problem_.empty()) return {};
    for (std::size_t i = 0; i < node_.size(); ++i) {
      if (node_.key(i).scalar() != key) continue;
      if (node_.value(i).IsScalar()) return std::string(node_.value(i).scalar());
      if (node_.value(i).IsNull() && !required) return {};
      problem_ = fmt::format("{}: {} is {}", what_, key, node_.value(i).DescribeShape());
      return {};
    }
    if (required) problem_ = fmt::format("{}: {} is missing", what_, key);
    return {};
  }

  std::optional<std::int64_t> Time(std::string_view key, bool required, std::int64_t now) {
    std::string text = Text(key, required);
    if (text.empty()) return std::nullopt;
    auto time = ParseTime(text, now);
    if (!time && problem_.empty()) {
      problem_ = fmt::format("{}: {} ({} bytes) is neither RFC 3339 nor relative like -15m", what_,
                             key, text.size());
    }
    return time;
  }

  const std::string& problem() const { return problem_; }

 private:
  YamlNode node_;
  std::string what_;
  std::string problem_;
};

// The list under `name`: nullopt when it is absent (or null) and may be; an Error when it is
// not a list, or absent and required: a snapshot cut short must not read as an empty scheduler.
Result<std::optional<YamlNode>> Section(YamlNode root, std::string_view name, bool required) {
  for (std::size_t i = 0; i < root.size(); ++i) {
    if (root.key(i).scalar() != name) continue;
    YamlNode value = root.value(i);
    if (value.IsSequence()) return std::optional<YamlNode>(value);
    if (value.IsNull() && !required) return std::optional<YamlNode>();
    return Error{fmt::format("{}:{}: {} is {}, not a list{}", value.line(), value.column(), name,
                             value.DescribeShape(), required ? kEmptyHint : "")};
  }
  if (!required) return std::optional<YamlNode>();
  return Error{fmt::format("{}:{}: no {} list{}", root.line(), root.column(), name, kEmptyHint)};
}

// A parser's message with what it quotes (an alias name, say) replaced by its size.
std::string WithoutQuotes(std::string_view message) {
  std::string out;
  for (std::size_t at = 0; at < message.size();) {
    std::size_t open = message.find('"', at);
    std::size_t close = open == std::string_view::npos ? open : message.find('"', open + 1);
    if (open == std::string_view::npos) {
      out.append(message.substr(at));
      break;
    }
    if (close == std::string_view::npos) close = message.size();
    out.append(message.substr(at, open - at));
    out += fmt::format("({} bytes)", close - std::min(close, open + 1));
    at = close + 1;
  }
  return out;
}

class FileSource : public Source {
 public:
  explicit FileSource(std::string path) : path_(std::move(path)) {}

  Result<SourceSnapshot> List(const ListContext& context) override {
    // Cancelled when the refresh stops waiting, so an abandoned read stops too.
    // Whoever writes the snapshot may own its directory: no link of theirs is followed.
    auto text = platform::ReadGuardedFile(path_, kMaxSnapshotBytes, context.cancelled);
    if (!text) return Error{text.error()};
    auto snapshot = ParseSnapshot(*text, context.now);
    if (!snapshot) return Error{fmt::format("{}:{}", path_, snapshot.error())};
    snapshot->problems = CapProblems(std::move(snapshot->problems));
    return snapshot;
  }

 private:
  std::string path_;
};

}  // namespace

Result<SourceSnapshot> ParseSnapshot(std::string_view text, std::int64_t now) {
  auto document = YamlDocument::Parse(text);
  if (!document) return Error{WithoutQuotes(document.error())};
  YamlNode root = document->root();
  if (!root.IsMapping()) {
    return Error{fmt::format("{}:{}: expected a mapping with objects, runs and progress, got {}",
                             root.line(), root.column(), root.DescribeShape())};
  }
  SourceSnapshot snapshot;
  auto problem = [&](YamlNode node, const std::string& message) {
    snapshot.problems.push_back(
        MakeProblem(Reason::kMalformedObject, fmt::format("line {}: {}", node.line(), message)));
  };
  auto objects_section = Section(root, "objects", /*required=*/true);
  if (!objects_section) return Error{objects_section.error()};
  auto runs_section = Section(root, "runs", false);
  if (!runs_section) return Error{runs_section.error()};
  auto progress_section = Section(root, "progress", false);
  if (!progress_section) return Error{progress_section.error()};

  YamlNode objects = **objects_section;
  for (std::size_t i = 0; i < objects.size(); ++i) {
    Item item(objects.item(i), fmt::format("objects[{}]", i));
    std::string id = item.Text("id", true);
    std::string role = item.Text("role", true);
    std::string schedule = item.Text("schedule", true);
    std::string timezone = item.Text("timezone", false);
    std::string spec_version = item.Text("spec_version", false);
    std::string enabled = item.Text("enabled", false);
    if (!enabled.empty() && enabled != "true" && enabled != "false") {
      problem(objects.item(i), fmt::format("objects[{}]: enabled ({} bytes) is not true or false",
                                           i, enabled.size()));
      continue;
    }
    if (!item.problem().empty()) {
      problem(objects.item(i), item.problem());
      continue;
    }
    snapshot.objects.emplace_back(id, role, schedule, timezone, spec_version, enabled != "false");
  }
  for (std::size_t i = 0; *runs_section && i < (*runs_section)->size(); ++i) {
    YamlNode runs = **runs_section;
    Item item(runs.item(i), fmt::format("runs[{}]", i));
    std::string role = item.Text("role", true);
    Run run;
    run.started = item.Time("started", true, now).value_or(0);
    run.finished = item.Time("finished", false, now);
    std::string result = item.Text("result", true);
    std::string run_id = item.Text("id", false);  // optional: the run's name, and its page
    std::string run_url = item.Text("url", false);
    if (!run_id.empty()) {
      run.identity = std::make_shared<const RunIdentity>(RunIdentity{run_id, run_url});
    }
    if (result == "success") {
      run.outcome = Run::Outcome::kSucceeded;
    } else if (result == "failure") {
      run.outcome = Run::Outcome::kFailed;
    } else if (result == "running") {
      run.outcome = Run::Outcome::kRunning;
    } else if (item.problem().empty()) {
      problem(runs.item(i),
              fmt::format("runs[{}]: result ({} bytes) is not success, failure or running", i,
                          result.size()));
      continue;
    }
    if (!item.problem().empty()) {
      problem(runs.item(i), item.problem());
      continue;
    }
    snapshot.history[role].Add(run);
  }
  for (std::size_t i = 0; *progress_section && i < (*progress_section)->size(); ++i) {
    YamlNode progress = **progress_section;
    Item item(progress.item(i), fmt::format("progress[{}]", i));
    std::string role = item.Text("role", true);
    auto time = item.Time("time", true, now);
    if (!item.problem().empty()) {
      problem(progress.item(i), item.problem());
      continue;
    }
    auto& slot = snapshot.progress[role];
    slot = std::max(slot, *time);
  }
  return snapshot;
}

Result<std::unique_ptr<Source>> MakeFileSource(const SourceOptions& options) {
  const auto* settings = options.spec->SettingsAs<file::FileSettings>();
  if (settings == nullptr) return Error{"the settings are not a file source's"};
  return std::unique_ptr<Source>(std::make_unique<FileSource>(settings->path));
}

}  // namespace schedwatch
