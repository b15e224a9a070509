// Reading the JSON answers of a scheduler's REST API (GitHub, GitLab): bounded parses, typed
// fields that are absent when missing or of another type, and a run reduced to what the run
// history needs.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "schedwatch/classify.h"
#include "schedwatch/result.h"

namespace schedwatch::api {

using Json = nlohmann::json;

// What one value of an answer may hold: a real item (a schedule, a pipeline, a workflow run,
// a repository) is a few hundred values a few levels deep. A 16 MiB answer of 8 M zeros or
// nested arrays would otherwise be a DOM of hundreds of MiB.
struct ValueBounds {
  std::size_t max_depth = 32;
  std::size_t max_values = 10000;
};

// A list answer read item by item: the list is the answer (`key` null) or the member `key` of
// the answer's object, whose other members are skipped. Each item is built alone, within
// `bounds`, and handed to `on_item` as soon as it ends: the item, or null with why when it
// passed a bound (it is then not built further). At most `max_items` items: an answer with
// more is no page of that many, an Error before more are read. Also an Error: not JSON, no list
// (null is none). `what` names the items in errors. The count of items read.
using ItemHandler = std::function<void(const Json* item, std::size_t index, const char* why)>;
Result<std::size_t> ReadItems(std::string_view body, const char* key, const char* what,
                              std::size_t max_items, const ItemHandler& on_item,
                              ValueBounds bounds = {});

// A whole answer within `bounds` (an error body, a repository); an Error when it is not JSON
// or passes them.
Result<Json> ParseBounded(std::string_view body, ValueBounds bounds = {});

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
            RunState state, std::shared_ptr<const RunIdentity> identity = nullptr);

}  // namespace schedwatch::api
