#include "sources/github_actions/github_mapping.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "schedwatch/platform/api_client.h"
#include "schedwatch/schedule.h"
#include "schedwatch/timefmt.h"
#include "schedwatch/yaml_tree.h"
#include "sources/api_answers.h"
#include "sources/problems.h"

namespace schedwatch::github {
namespace {

using Json = nlohmann::json;

constexpr std::size_t kMaxMessageChars = 200;

// GitHub's largest per_page: a page holding more items is no page of its list.
constexpr std::size_t kMaxPageItems = 100;

using api::Field;
using api::StringField;
using api::TimeField;

// GitHub's `message`, printable and short: it ends up in logs and on the status page.
std::string ShortMessage(std::string_view body) {
  auto json = api::ParseBounded(body);
  std::string message;
  if (json && json->is_object()) message = StringField(*json, "message").value_or("");
  if (message.size() > kMaxMessageChars) message = message.substr(0, kMaxMessageChars) + "...";
  for (char& c : message) {
    if (std::iscntrl(static_cast<unsigned char>(c))) c = ' ';
  }
  return message;
}

std::optional<YamlNode> MappingValue(YamlNode mapping, std::string_view key) {
  for (std::size_t i = 0; i < mapping.size(); ++i) {
    if (mapping.key(i).IsScalar() && mapping.key(i).scalar() == key) return mapping.value(i);
  }
  return std::nullopt;
}

// At most 40 characters of a workflow's text for a message, control characters replaced.
std::string Printable(std::string_view text) {
  std::string result(text.substr(0, 40));
  for (char& c : result) {
    if (std::iscntrl(static_cast<unsigned char>(c))) c = '?';
  }
  return result;
}

// The next line of `text` and its end, where libyaml ends lines (\n, \r\n, \r, NEL, LS, PS),
// so that line numbers agree with the YAML tree's.
std::string_view NextLine(std::string_view& text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    std::size_t skip = 0;
    char c = text[i];
    if (c == '\n') {
      skip = 1;
    } else if (c == '\r') {
      skip = i + 1 < text.size() && text[i + 1] == '\n' ? 2 : 1;
    } else if (c == '\xc2' && i + 1 < text.size() && text[i + 1] == '\x85') {
      skip = 2;
    } else if (c == '\xe2' && i + 2 < text.size() && text[i + 1] == '\x80' &&
               (text[i + 2] == '\xa8' || text[i + 2] == '\xa9')) {
      skip = 3;
    }
    if (skip == 0) continue;
    std::string_view line = text.substr(0, i);
    text.remove_prefix(i + skip);
    return line;
  }
  std::string_view line = text;
  text = {};
  return line;
}

// `# schedwatch: spec_version=7` on a line of its own that is a YAML comment: a '#' line
// inside a `run: |` block or a quoted string is the script's text, and does not count. Two
// markers that disagree are a problem, and then no version is claimed.
std::string MarkerSpecVersion(std::string_view text, const YamlDocument& document,
                              std::vector<std::string>& problems) {
  constexpr std::string_view kMarker = "schedwatch:";
  constexpr std::string_view kBom = "\xef\xbb\xbf";
  if (text.substr(0, kBom.size()) == kBom) text.remove_prefix(kBom.size());
  std::string version;
  int version_line = 0;
  for (int number = 1; !text.empty(); ++number) {
    std::string_view line = NextLine(text);
    std::size_t hash = line.find_first_not_of(" \t");
    if (hash == std::string_view::npos || line[hash] != '#') continue;
    line.remove_prefix(hash + 1);
    line.remove_prefix(std::min(line.size(), line.find_first_not_of(" \t")));
    if (line.substr(0, kMarker.size()) != kMarker) continue;
    if (document.LineInsideScalar(number)) continue;
    line.remove_prefix(kMarker.size());
    while (!line.empty()) {
      std::size_t start = line.find_first_not_of(" \t");
      if (start == std::string_view::npos) break;
      line.remove_prefix(start);
      std::string_view token = line.substr(0, line.find_first_of(" \t"));
      line.remove_prefix(token.size());
      constexpr std::string_view kKey = "spec_version=";
      if (token.substr(0, kKey.size()) != kKey) continue;
      std::string found(token.substr(kKey.size()));
      if (version_line == 0) {
        version = std::move(found);
        version_line = number;
      } else if (found != version) {
        problems.push_back(fmt::format(
            "line {}: a second schedwatch marker says spec_version={}, line {} said {}; no spec "
            "version is taken from the file",
            number, Printable(found), version_line, Printable(version)));
        return {};
      }
      break;
    }
  }
  return version;
}

}  // namespace

Result<bool> SomethingReadable(std::size_t items, const std::vector<SourceProblem>& problems,
                               const char* key) {
  if (items == 0 || problems.size() < items) return true;
  return Error{fmt::format("none of the {} items of \"{}\" can be read (first: {})", items, key,
                           problems.front().message)};
}

Result<WorkflowPage> ParseWorkflowPage(std::string_view body) {
  WorkflowPage page;
  auto read = api::ReadItems(
      body, "workflows", "workflows", kMaxPageItems,
      [&page](const Json* item, std::size_t i, const char* bound) {
        const Json* id = item != nullptr && item->is_object() ? Field(*item, "id") : nullptr;
        auto path = id != nullptr ? StringField(*item, "path") : std::nullopt;
        auto state = id != nullptr ? StringField(*item, "state") : std::nullopt;
        if (id == nullptr || !id->is_number_integer() || !path || !state) {
          page.problems.push_back(MakeProblem(
              Reason::kMalformedObject,
              bound != nullptr
                  ? fmt::format("workflows[{}]: not read: {}", i, bound)
                  : fmt::format(
                        "workflows[{}]: expected an object with integer id, string path and state",
                        i)));
          return;
        }
        Workflow workflow;
        workflow.id = id->get<std::int64_t>();
        workflow.path = *path;
        workflow.state = *state;
        workflow.name = StringField(*item, "name").value_or("");
        page.workflows.push_back(std::move(workflow));
      });
  if (!read) return Error{read.error()};
  page.listed = *read;
  return page;
}

Result<std::string> ParseDefaultBranch(std::string_view body) {
  auto json = api::ParseBounded(body);
  if (!json) return Error{json.error()};
  auto branch = json->is_object() ? StringField(*json, "default_branch") : std::nullopt;
  if (!branch || branch->empty()) return Error{"the repository has no default_branch"};
  return *branch;
}

Result<DirectoryListing> ParseDirectoryListing(std::string_view body) {
  DirectoryListing listing;
  std::size_t unreadable = 0;
  auto read = api::ReadItems(body, nullptr, "directory entries", kMaxDirectoryEntries,
                             [&](const Json* entry, std::size_t, const char*) {
                               bool object = entry != nullptr && entry->is_object();
                               auto path = object ? StringField(*entry, "path") : std::nullopt;
                               auto sha = object ? StringField(*entry, "sha") : std::nullopt;
                               // An entry without a sha is simply fetched by path later.
                               if (path && sha) listing.blob_sha_by_path[*path] = *sha;
                               // One without a path could be any file: the listing no longer proves
                               // a file absent.
                               if (!path) ++unreadable, listing.complete = false;
                             });
  if (!read) return Error{read.error()};
  if (*read >= kMaxDirectoryEntries) listing.complete = false;
  if (unreadable > 0 && unreadable == *read) {
    return Error{
        fmt::format("none of the {} entries of the directory listing has a path", unreadable)};
  }
  return listing;
}

Result<WorkflowFile> ParseWorkflowFile(std::string_view text) {
  auto document = YamlDocument::Parse(text);
  if (!document) return Error{document.error()};
  WorkflowFile file;
  file.spec_version = MarkerSpecVersion(text, *document, file.problems);
  // GitHub's workflow parser takes one document with unique keys and refuses the file
  // otherwise ("'on' is already defined"): such a workflow never runs, so no schedule counts.
  if (const auto& duplicate = document->duplicate_key()) {
    file.problems.push_back(fmt::format(
        "line {}: GitHub refuses this workflow: key \"{}\" is defined twice (first on line {}); "
        "it runs on no schedule",
        duplicate->at.line, Printable(duplicate->key), duplicate->first.line));
    file.spec_version.clear();
    return file;
  }
  if (const auto& second = document->second_document()) {
    file.problems.push_back(
        fmt::format("line {}: GitHub refuses this workflow: a second YAML document; it runs on "
                    "no schedule",
                    second->line));
    file.spec_version.clear();
    return file;
  }
  YamlNode root = document->root();
  if (!root.IsMapping()) {
    file.problems.push_back(
        fmt::format("line {}: the workflow is {}, not a mapping", root.line(), root.Describe()));
    return file;
  }
  if (auto concurrency = MappingValue(root, "concurrency")) {
    // A group name (`concurrency: nightly`) or a mapping with a group; empty means none.
    auto group = concurrency->IsMapping() ? MappingValue(*concurrency, "group") : concurrency;
    file.has_concurrency = group && group->IsScalar() && !group->scalar().empty();
  }
  // YAML 1.1 readers turn the key `on` into true; YamlDocument keeps the text "on".
  auto on = MappingValue(root, "on");
  if (!on || !on->IsMapping()) return file;  // `on: push`, `on: [push]`: no schedule
  auto schedule = MappingValue(*on, "schedule");
  if (!schedule || schedule->IsNull()) return file;
  if (!schedule->IsSequence()) {
    file.problems.push_back(fmt::format("line {}: on.schedule is {}, not a list", schedule->line(),
                                        schedule->Describe()));
    return file;
  }
  for (std::size_t i = 0; i < schedule->size(); ++i) {
    YamlNode entry = schedule->item(i);
    auto cron = entry.IsMapping() ? MappingValue(entry, "cron") : std::nullopt;
    if (!cron || !cron->IsScalar()) {
      file.problems.push_back(
          fmt::format("line {}: on.schedule[{}] has no cron string", entry.line(), i));
      continue;
    }
    CronEntry parsed{std::string(cron->scalar()), "", entry.line()};
    if (auto zone = MappingValue(entry, "timezone"); zone && zone->IsScalar()) {
      parsed.timezone = std::string(zone->scalar());
    }
    file.schedules.push_back(std::move(parsed));
  }
  return file;
}

std::string NormalizeWorkflowPath(std::string_view path) {
  while (path.substr(0, 2) == "./") path.remove_prefix(2);
  while (!path.empty() && path.front() == '/') path.remove_prefix(1);
  if (path.find('/') == std::string_view::npos) return ".github/workflows/" + std::string(path);
  return std::string(path);
}

LiveObject MakeLiveObject(const Workflow& workflow, const WorkflowFile* file, const JobSpec& job) {
  std::string id = std::to_string(workflow.id);
  bool enabled = workflow.state == "active";
  // GitHub runs schedules in UTC unless the entry names a zone.
  if (file == nullptr) return LiveObject(id, job.role, "", "UTC", "", enabled);
  const CronEntry* chosen = nullptr;
  int best = 0;  // 2: same schedule and zone, 1: same schedule
  for (const auto& entry : file->schedules) {
    auto expression = CronExpression::Parse(entry.cron, CronDialect::kGitHubActions);
    if (!expression || !expression->Equivalent(job.schedule.expression())) continue;
    int score = (entry.timezone.empty() ? "UTC" : entry.timezone) == job.timezone ? 2 : 1;
    if (score > best) chosen = &entry, best = score;
  }
  if (chosen == nullptr && !file->schedules.empty()) chosen = &file->schedules.front();
  std::string_view schedule;
  std::string_view timezone = "UTC";
  if (chosen != nullptr) {
    schedule = chosen->cron;
    if (!chosen->timezone.empty()) timezone = chosen->timezone;
  }
  return LiveObject(id, job.role, schedule, timezone, file->spec_version, enabled);
}

Result<RunPage> ParseRunPage(std::string_view body, const std::string& what) {
  RunPage page;
  auto read = api::ReadItems(
      body, "workflow_runs", "workflow runs", kMaxPageItems,
      [&](const Json* item, std::size_t i, const char* bound) {
        std::int64_t workflow_id = 0;
        std::string path;
        if (item != nullptr && item->is_object()) {
          const Json* id = Field(*item, "workflow_id");
          if (id != nullptr && id->is_number_integer()) workflow_id = id->get<std::int64_t>();
          // The repository's runs name their workflow: messages say which.
          if (auto named = StringField(*item, "path")) {
            path = " (" + named->substr(0, kMaxMessageChars) + ")";
            for (char& c : path) {
              if (std::iscntrl(static_cast<unsigned char>(c))) c = '?';
            }
          }
        }
        auto problem = [&](const std::string& message) {
          page.problems.push_back(
              MakeProblem(Reason::kMalformedObject,
                          fmt::format("{}: workflow_runs[{}]{}: {}", what, i, path, message)));
          page.problem_workflows.push_back(workflow_id);
        };
        if (item == nullptr) return problem(fmt::format("not read: {}", bound));
        if (!item->is_object()) return problem("not an object");
        auto status = StringField(*item, "status");
        if (!status) return problem("no status");
        ScheduledRun run;
        auto started = TimeField(*item, "run_started_at");
        if (!started) started = TimeField(*item, "created_at");
        if (!started) return problem("neither run_started_at nor created_at is an RFC 3339 time");
        run.started = *started;
        run.created = TimeField(*item, "created_at").value_or(run.started);
        run.workflow_id = workflow_id;
        if (const Json* id = Field(*item, "id"); id != nullptr && id->is_number_unsigned()) {
          run.identity = std::make_shared<const RunIdentity>(
              RunIdentity{std::to_string(id->get<std::uint64_t>()),
                          StringField(*item, "html_url").value_or("")});
        }
        if (*status != "completed") {
          run.state = ScheduledRun::State::kRunning;  // queued, in_progress, waiting, pending, ...
          page.runs.push_back(run);
          return;
        }
        auto conclusion = StringField(*item, "conclusion");
        if (!conclusion) return problem("completed without a conclusion");
        run.finished = TimeField(*item, "updated_at").value_or(run.started);
        if (*conclusion == "success") {
          run.state = ScheduledRun::State::kSucceeded;
        } else if (*conclusion == "failure" || *conclusion == "timed_out" ||
                   *conclusion == "startup_failure" || *conclusion == "stale") {
          run.state = ScheduledRun::State::kFailed;
        } else {
          run.state = ScheduledRun::State::kEnded;  // cancelled, skipped, neutral, action_required
        }
        page.runs.push_back(run);
      });
  if (!read) return Error{read.error()};
  page.listed = *read;
  if (auto readable = SomethingReadable(page.listed, page.problems, "workflow_runs"); !readable) {
    return Error{readable.error()};
  }
  return page;
}

void AddRun(RunHistory& history, const ScheduledRun& run) {
  static constexpr api::RunState kStates[] = {api::RunState::kRunning, api::RunState::kSucceeded,
                                              api::RunState::kFailed, api::RunState::kEnded};
  api::AddRun(history, run.started, run.finished, kStates[static_cast<int>(run.state)],
              run.identity);
}

ApiFailure ClassifyFailure(long status, const std::map<std::string, std::string>& headers,
                           std::string_view body, std::int64_t now, std::int64_t secondary_backoff,
                           std::chrono::seconds max_wait) {
  ApiFailure failure;
  failure.message = ShortMessage(body);
  std::string lower = failure.message;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  if (status == 401) {
    failure.kind = ApiFailure::Kind::kUnauthorized;
  } else if (status == 403 || status == 429) {
    auto header = headers.find("retry-after");
    auto retry_after =
        header == headers.end() ? std::nullopt : platform::ParseRetryAfter(header->second, now);
    auto reset = IntegerHeader(headers, "x-ratelimit-reset");
    failure.kind = ApiFailure::Kind::kRateLimited;
    failure.secondary = lower.find("secondary") != std::string::npos;
    if (retry_after) {
      failure.retry_at = now + retry_after->count();
    } else if (IntegerHeader(headers, "x-ratelimit-remaining") == 0 && !failure.secondary) {
      failure.retry_at = reset ? std::max(*reset, now) : now + secondary_backoff;
    } else if (lower.find("rate limit") != std::string::npos || status == 429) {
      failure.secondary = true;
      failure.retry_at = now + secondary_backoff;
    } else {
      failure.kind = ApiFailure::Kind::kForbidden;  // a permission problem, not a limit
    }
    if (failure.retry_at) {
      failure.retry_at =
          platform::BoundedRetryAt(*failure.retry_at, now, max_wait, &failure.capped);
    }
  } else if (status == 404) {
    failure.kind = ApiFailure::Kind::kNotFound;
  } else if (status >= 500) {
    failure.kind = ApiFailure::Kind::kServer;
  }
  return failure;
}

}  // namespace schedwatch::github
