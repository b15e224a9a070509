#include "sources/api_answers.h"

#include "schedwatch/timefmt.h"

namespace schedwatch::api {

const Json* Field(const Json& object, const char* key) {
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::optional<std::string> StringField(const Json& object, const char* key) {
  const Json* value = Field(object, key);
  if (value == nullptr || !value->is_string()) return std::nullopt;
  return value->get<std::string>();
}

std::optional<std::int64_t> TimeField(const Json& object, const char* key) {
  auto text = StringField(object, key);
  return text ? ParseRfc3339(*text) : std::nullopt;
}

void AddRun(RunHistory& history, std::int64_t started, std::optional<std::int64_t> finished,
            RunState state) {
  Run run;
  run.started = started;
  run.finished = finished;
  switch (state) {
    case RunState::kRunning:
      run.outcome = Run::Outcome::kRunning;
      run.finished.reset();
      break;
    case RunState::kSucceeded:
      run.outcome = Run::Outcome::kSucceeded;
      break;
    case RunState::kFailed:
      run.outcome = Run::Outcome::kFailed;
      break;
    case RunState::kEnded: {
      RunHistory started_only;
      started_only.last_started = started;
      history.Merge(started_only);
      return;
    }
  }
  history.Add(run);
}

}  // namespace schedwatch::api
