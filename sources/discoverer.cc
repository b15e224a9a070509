#include "sources/discoverer.h"

#include <algorithm>
#include <cctype>

namespace schedwatch {

FoundObject FoundFromLive(const LiveObject& live) {
  FoundObject object;
  object.id = live.id();
  object.role = live.role();
  object.spec_version = live.spec_version();
  object.marked = !live.role().empty();
  object.schedule = live.schedule();
  object.timezone = live.timezone();
  return object;
}

std::vector<LiveObject> SortedById(std::vector<LiveObject> objects) {
  std::sort(objects.begin(), objects.end(),
            [](const LiveObject& a, const LiveObject& b) { return a.id() < b.id(); });
  return objects;
}

std::string ShellWord(const std::string& text) {
  bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
           c == '/' || c == '=' || c == ':' || c == '~';
  });
  if (plain) return text;
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

void AddLongestRun(const RunHistory& history, bool successes_only, FoundObject& object) {
  for (const Run& run : history.runs) {
    if (!run.finished || (successes_only && run.outcome != Run::Outcome::kSucceeded)) continue;
    ++object.finished_runs;
    std::int64_t took = std::max<std::int64_t>(0, *run.finished - run.started);
    object.longest_run_seconds = std::max(object.longest_run_seconds.value_or(0), took);
  }
}

}  // namespace schedwatch
