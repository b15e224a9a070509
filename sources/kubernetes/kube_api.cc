#include "sources/kubernetes/kube_api.h"

#include <fmt/format.h>

#include <optional>
#include <unordered_set>

#include "sources/kubernetes/kube_objects.h"
#include "sources/problems.h"

namespace schedwatch::kubernetes {

platform::RetryPolicy DefaultRetryPolicy() {
  platform::RetryPolicy policy;
  policy.max_attempts = 3;
  policy.first_backoff = std::chrono::milliseconds(200);
  policy.max_backoff = std::chrono::milliseconds(12800);
  policy.request_timeout = std::chrono::seconds(5);
  policy.connect_timeout = std::chrono::seconds(5);
  return policy;
}

ApiLister::ApiLister(platform::ApiClient& client, std::string server, ListOptions options,
                     platform::Clock::TimePoint deadline, const std::atomic<bool>* cancelled)
    : client_(client),
      server_(std::move(server)),
      options_(options),
      deadline_(deadline),
      cancelled_(cancelled) {}

void ApiLister::TakeRecovered() {
  for (auto& recovered : client_.TakeRecovered()) problems_.push_back(RecoveredProblem(recovered));
}

Result<bool> ApiLister::List(const std::string& path, const std::string& query,
                             const PageStarter& start_page, const PageHandler& on_page,
                             const std::function<void()>& on_restart) {
  const std::string where = "GET " + path;
  std::string continue_token;
  // Every token this pass of the list has followed: a server that hands one out again would
  // be followed in a circle until the timeout.
  std::unordered_set<std::string> followed;
  int restarts = 0, pages = 0;
  std::optional<PageStream> stream;
  std::optional<PageEnd> page;
  std::size_t received = 0;
  std::string too_large;  // why an answer passed a limit; not retried: it would come again
  platform::ApiCall call;
  // An error answer is kept (it is small, a Status); a list page streams through `stream`.
  call.max_body_bytes = options_.max_answer_bytes;
  call.on_attempt = [&] {
    stream.reset();
    page.reset();
    received = 0;
    too_large.clear();
  };
  call.on_data = [&](std::string_view data) {
    if (!stream) stream.emplace(start_page());
    received += data.size();
    if (received > options_.max_answer_bytes) {
      too_large = fmt::format("the answer is larger than {} bytes", options_.max_answer_bytes);
      return false;
    }
    if (stream->Feed(data)) return true;
    if (stream->over_limit()) too_large = stream->Finish().error();
    return false;
  };
  call.describe = [](const HttpResponse& response) {
    return DescribeApiError(response.status, response.body);
  };
  call.check = [&](const HttpResponse& response) -> Result<bool> {
    if (response.status != 200 || !too_large.empty()) return true;  // judged below
    if (!stream) stream.emplace(start_page());                      // an empty body
    auto end = stream->Finish();
    if (!end) return Error{end.error()};
    page = std::move(*end);
    return true;
  };
  for (;;) {
    call.url = fmt::format("{}{}?limit={}", server_, path, options_.page_size);
    if (!query.empty()) call.url += "&" + query;
    if (!continue_token.empty()) call.url += "&continue=" + UrlEncode(continue_token);
    if (cancelled_ != nullptr && cancelled_->load()) return Error{where + ": cancelled"};
    if (client_.clock().Now() >= deadline_) {
      return Error{
          fmt::format("{}: no complete list within the timeout ({} pages read)", where, pages)};
    }
    auto response = client_.Send(call, deadline_, cancelled_);
    TakeRecovered();
    if (!response) return Error{response.error()};
    if (!too_large.empty()) return Error{fmt::format("{}: {}", where, too_large)};
    if (response->status == 200) {
      continue_token = on_page(*page);
      ++pages;
      if (continue_token.empty()) return true;
      if (!followed.insert(continue_token).second) {
        return Error{fmt::format(
            "{}: page {} repeats the continue token of an earlier page; the list never completes",
            where, pages)};
      }
    } else if (response->status == 410 && !continue_token.empty() &&
               StatusReason(response->body) == "Expired") {
      // The caller's case, not a retry: the list starts again from its first page.
      if (++restarts > options_.max_restarts) {
        return Error{fmt::format(
            "{}: the continue token expired {} times; the list never completed", where, restarts)};
      }
      problems_.push_back({std::string(ReasonName(Reason::kListRestarted)),
                           fmt::format("{}: the continue token expired after {} pages; "
                                       "listing again from the start",
                                       where, pages),
                           /*recovered=*/true});
      on_restart();
      continue_token.clear();
      followed.clear();
      pages = 0;
    } else {
      return Error{fmt::format("{}: {}", where,
                               DescribeApiError(response->status, client_.Redact(response->body)))};
    }
  }
}

}  // namespace schedwatch::kubernetes
