// GitHub REST answers: the workflow list, the repository, a directory listing, a page of runs,
// error bodies, and a Link header, all from the same text.
#include <cstdlib>

#include "fuzz/fuzz_util.h"
#include "schedwatch/platform/api_client.h"
#include "schedwatch/timefmt.h"
#include "sources/api_answers.h"
#include "sources/github_actions/github_mapping.h"

namespace {

using schedwatch::api::Json;

// Depth and count of the values of `value`.
std::size_t Depth(const Json& value) {
  std::size_t depth = 0;
  if (value.is_structured()) {
    for (const auto& child : value) depth = std::max(depth, Depth(child));
    ++depth;
  }
  return depth;
}
std::size_t Values(const Json& value) {
  std::size_t values = 1;
  if (value.is_structured()) {
    for (const auto& child : value) values += Values(child);
  }
  return values;
}

// Every value of a text as read, and its deepest nesting.
struct ValueCounter : nlohmann::json_sax<Json> {
  std::size_t values = 0, depth = 0, depth_max = 0;
  bool Value() { return ++values, true; }
  bool Open() {
    depth_max = std::max(depth_max, ++depth);
    return Value();
  }
  bool null() override { return Value(); }
  bool boolean(bool) override { return Value(); }
  bool number_integer(number_integer_t) override { return Value(); }
  bool number_unsigned(number_unsigned_t) override { return Value(); }
  bool number_float(number_float_t, const string_t&) override { return Value(); }
  bool string(string_t&) override { return Value(); }
  bool binary(binary_t&) override { return Value(); }
  bool start_object(std::size_t) override { return Open(); }
  bool start_array(std::size_t) override { return Open(); }
  bool end_object() override { return --depth, true; }
  bool end_array() override { return --depth, true; }
  bool key(string_t&) override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }
};

// The bounded reader against nlohmann's own parse, with small bounds: each item it builds is
// the DOM's and within them, each it drops passes them, and more items than allowed is refused.
void CheckBoundedRead(std::string_view text) {
  constexpr std::size_t kItems = 4;
  const schedwatch::api::ValueBounds bounds{3, 20};
  Json dom = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  std::size_t seen = 0;
  auto read = schedwatch::api::ReadItems(
      text, nullptr, "items", kItems,
      [&](const Json* item, std::size_t index, const char* why) {
        if (index != seen++ || index >= kItems || (item == nullptr) == (why == nullptr)) {
          std::abort();
        }
        if (item != nullptr &&
            (Depth(*item) > bounds.max_depth || Values(*item) > bounds.max_values)) {
          std::abort();
        }
        // Items end before a later error: they are the DOM's only when the text is JSON.
        if (dom.is_discarded() || !dom.is_array()) return;
        const Json& expected = dom[index];
        bool within = Depth(expected) <= bounds.max_depth && Values(expected) <= bounds.max_values;
        // A dropped item may be within them as the DOM keeps it: a key twice counts twice.
        if (item != nullptr && (!within || *item != expected)) std::abort();
      },
      bounds);
  bool expected_ok = !dom.is_discarded() && dom.is_array() && dom.size() <= kItems;
  if (read.ok() != expected_ok || (read.ok() && (*read != dom.size() || seen != dom.size()))) {
    std::abort();
  }
  auto whole = schedwatch::api::ParseBounded(text, bounds);
  if (whole.ok() && *whole != dom) std::abort();
  if (!whole.ok() && !dom.is_discarded()) {
    // Refused only past a bound, counting the values as read (a key twice counts twice).
    ValueCounter counter;
    Json::sax_parse(text.begin(), text.end(), &counter);
    if (counter.depth_max <= bounds.max_depth && counter.values <= bounds.max_values) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace schedwatch;
  using namespace schedwatch::github;
  std::string_view text = fuzz::AsText(data, size);
  CheckBoundedRead(text);
  ParseWorkflowPage(text);
  ParseDefaultBranch(text);
  ParseDirectoryListing(text);
  if (auto page = ParseRunPage(text, "nightly.yml")) {
    RunHistory history;
    for (const ScheduledRun& run : page->runs) AddRun(history, run);
  }
  NextLink(text);
  // The text as a header value too: Retry-After (seconds or an HTTP-date) and the rate-limit
  // headers (numbers).
  std::map<std::string, std::string> headers = {{"retry-after", std::string(text)},
                                                {"x-ratelimit-remaining", "0"},
                                                {"x-ratelimit-reset", std::string(text)}};
  IntegerHeader(headers, "x-ratelimit-reset");
  platform::ParseRetryAfter(text, fuzz::kNow);
  for (long status : {401L, 403L, 404L, 429L, 502L}) {
    ApiFailure failure = ClassifyFailure(status, headers, text, fuzz::kNow, 60);
    // Whatever the server said, the wait is bounded and prints as a date.
    if (failure.retry_at && (*failure.retry_at < fuzz::kNow ||
                             *failure.retry_at > fuzz::kNow + kMaxRateLimitWait.count())) {
      std::abort();
    }
    if (failure.retry_at) FormatRfc3339(*failure.retry_at);
  }
  if (auto reset = IntegerHeader(headers, "x-ratelimit-reset")) {
    if (FormatRfc3339(*reset).size() != 20) std::abort();  // "YYYY-MM-DDTHH:MM:SSZ"
  }
  return 0;
}
