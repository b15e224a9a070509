// Reading the JSON answers of a scheduler's REST API (GitHub, GitLab): typed fields that are
// absent when missing or of another type, and a run reduced to what the run history needs.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "schedwatch/classify.h"

namespace schedwatch::api {

using Json = nlohmann::json;

const Json* Field(const Json& object, const char* key);
std::optional<std::string> StringField(const Json& object, const char* key);
// An RFC 3339 time.
std::optional<std::int64_t> TimeField(const Json& object, const char* key);

// How a scheduler's run (a workflow run, a pipeline) ended, or that it has not.
enum class RunState {
  kRunning,
  kSucceeded,
  kFailed,
  kEnded,  // cancelled, skipped: it started, and says nothing of success or failure
};
void AddRun(RunHistory& history, std::int64_t started, std::optional<std::int64_t> finished,
            RunState state);

}  // namespace schedwatch::api
