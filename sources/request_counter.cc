#include "sources/request_counter.h"

namespace schedwatch {

std::string RequestOutcome(long status) {
  switch (status) {
    case 200:
    case 201:
    case 304:
    case 401:
    case 403:
    case 404:
    case 422:
    case 429:
      return std::to_string(status);
    default:
      return status >= 500 && status < 600 ? "5xx" : "other";
  }
}

RequestCounter::RequestCounter(std::string remaining_header)
    : remaining_header_(std::move(remaining_header)), counts_(std::make_shared<Counts>()) {}

platform::HttpTransport RequestCounter::Counting(platform::HttpTransport send) const {
  return [send = std::move(send), counts = counts_, header = remaining_header_](
             const HttpRequest& request, const std::atomic<bool>* cancelled,
             HttpFailure* failure) -> Result<HttpResponse> {
    auto response = send(request, cancelled, failure);
    std::lock_guard<std::mutex> lock(counts->mutex);
    if (!response) {
      ++counts->by_outcome["error"];
      return response;
    }
    ++counts->by_outcome[RequestOutcome(response->status)];
    if (auto remaining = platform::IntegerHeader(response->headers, header)) {
      counts->remaining = remaining;
    }
    return response;
  };
}

SourceRequestCounts RequestCounter::Usage() const {
  std::lock_guard<std::mutex> lock(counts_->mutex);
  SourceRequestCounts usage;
  usage.by_outcome = counts_->by_outcome;
  usage.rate_limit_remaining = counts_->remaining;
  return usage;
}

void RequestCounter::Inherit(const RequestCounter& previous) {
  if (previous.counts_ == counts_) return;
  std::scoped_lock lock(counts_->mutex, previous.counts_->mutex);
  for (const auto& [outcome, count] : previous.counts_->by_outcome) {
    counts_->by_outcome[outcome] += count;
  }
  if (!counts_->remaining) counts_->remaining = previous.counts_->remaining;
}

}  // namespace schedwatch
