// GitHub REST answers: the workflow list, the repository, a directory listing, a page of runs,
// error bodies, and a Link header, all from the same text.
#include <cstdlib>

#include "fuzz/fuzz_util.h"
#include "schedwatch/platform/api_client.h"
#include "schedwatch/timefmt.h"
#include "sources/github_actions/github_mapping.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace schedwatch;
  using namespace schedwatch::github;
  std::string_view text = fuzz::AsText(data, size);
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
