#include "sources/kubernetes/kube_watch.h"

#include <fmt/format.h>

#include <algorithm>

#include "schedwatch/platform/log.h"
#include "sources/problems.h"

namespace schedwatch::kubernetes {
namespace {

// A watch line is one object: a larger one breaks the stream as a list page past the cap
// fails the read.
constexpr std::size_t kMaxEventBytes = ListOptions::kDefaultMaxAnswerBytes;
// The answer of a watch that is refused (a Status) is kept up to this.
constexpr std::size_t kMaxRefusalBytes = 1u << 20;
// The whole watch request may take its timeoutSeconds and this much more.
constexpr std::chrono::seconds kWatchGrace{60};
constexpr std::chrono::minutes kMaxQuickEndBackoff{1};
// A watch that ends sooner than this with no event or bookmark ended "at once".
constexpr std::chrono::seconds kQuickEnd{1};

template <typename T>
struct Kind;

template <>
struct Kind<CronJob> {
  static constexpr const char* kName = "CronJob";
  static constexpr const char* kList = "cronjobs";
  static PageStream Stream(std::function<void(Mapped<CronJob>)> on_item) {
    return StreamCronJobList(std::move(on_item));
  }
  static Result<WatchEvent<CronJob>> Event(std::string_view line) {
    return ParseCronJobEvent(line);
  }
};

template <>
struct Kind<Job> {
  static constexpr const char* kName = "Job";
  static constexpr const char* kList = "jobs";
  static PageStream Stream(std::function<void(Mapped<Job>)> on_item) {
    return StreamOwnedJobList(std::move(on_item));
  }
  static Result<WatchEvent<Job>> Event(std::string_view line) { return ParseJobEvent(line); }
};

}  // namespace

template <typename T>
Informer<T>::Informer(std::string path, std::string query, std::function<Connection()> connection,
                      TransportFactory transport, platform::Clock& clock, WatchTuning tuning)
    : path_(std::move(path)),
      query_(std::move(query)),
      connection_(std::move(connection)),
      transport_(std::move(transport)),
      clock_(clock),
      tuning_(tuning) {}

template <typename T>
Informer<T>::~Informer() {
  Stop();
}

template <typename T>
void Informer<T>::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

template <typename T>
bool Informer<T>::synced() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return synced_;
}

template <typename T>
std::string Informer<T>::last_failure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_failure_;
}

template <typename T>
void Informer<T>::Relist(std::string why) {
  std::lock_guard<std::mutex> lock(mutex_);
  synced_ = false;
  last_failure_ = std::move(why);
}

template <typename T>
std::size_t Informer<T>::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return objects_.size();
}

template <typename T>
WatchCounts Informer<T>::counts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counts_;
}

template <typename T>
void Informer<T>::CopyTo(std::vector<T>& items, std::vector<SourceProblem>& problems,
                         const std::function<bool(const std::string& owner)>& ours) const {
  std::lock_guard<std::mutex> lock(mutex_);
  items.reserve(items.size() + objects_.size());
  for (const auto& [key, value] : objects_) items.push_back(value);
  for (const auto& [key, unreadable] : problems_) {
    if (!ours || ours(unreadable.owner)) problems.push_back(unreadable.problem);
  }
  if (unlisted_problems_ > 0) {
    problems.push_back(
        MakeProblem(Reason::kMalformedObject,
                    fmt::format("{} more unreadable {} in the last list, not listed one by one",
                                unlisted_problems_, Kind<T>::kList)));
  }
}

template <typename T>
Result<bool> Informer<T>::Sync(ApiLister& lister) {
  if (synced()) return true;
  std::unordered_map<std::string, T> objects;
  std::unordered_map<std::string, Unreadable> problems;
  std::string resource_version;
  std::size_t seen = 0;
  // A page's items count once the page was read whole.
  std::vector<Mapped<T>> page_items;
  std::size_t page_seen = 0, unlisted = 0;
  std::string first_unlisted;
  auto keep = [&](Mapped<T> mapped) {
    if (mapped.value && Kept(*mapped.value)) objects[mapped.key] = std::move(*mapped.value);
    if (!mapped.problem) return;
    // A few problems per list are kept by item; a page of millions of unreadable one-byte
    // items is counted, not kept.
    // (one place left for the count of the rest).
    if (problems.size() + 1 < kMaxListedItemProblems || problems.count(mapped.key)) {
      problems[mapped.key] = {mapped.owner, std::move(*mapped.problem)};
    } else if (unlisted++ == 0) {
      first_unlisted = mapped.problem->message;
    }
  };
  auto listed = lister.List(
      path_, query_,
      [&] {
        page_items.clear();
        page_seen = 0;
        return Kind<T>::Stream([&](Mapped<T> mapped) {
          ++page_seen;  // items neither ours nor problems are only counted
          if (mapped.value || mapped.problem) page_items.push_back(std::move(mapped));
        });
      },
      [&](const PageEnd& page) {
        for (auto& mapped : page_items) keep(std::move(mapped));
        page_items.clear();
        seen += page_seen;
        resource_version = page.resource_version;
        return page.continue_token;
      },
      [&] {
        objects.clear();
        problems.clear();
        unlisted = 0;
        seen = 0;
      });
  if (!listed) return listed;
  std::vector<SourceProblem> item_problems;
  for (const auto& [key, unreadable] : problems) item_problems.push_back(unreadable.problem);
  if (auto unreadable = NothingReadable(
          seen, item_problems.size() + unlisted,
          item_problems.empty() ? first_unlisted : item_problems.front().message, Kind<T>::kList)) {
    return Error{fmt::format("GET {}: {}", path_, *unreadable)};
  }
  if (resource_version.empty()) {
    return Error{
        fmt::format("GET {}: the list has no metadata.resourceVersion to watch from", path_)};
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    objects_ = std::move(objects);
    problems_ = std::move(problems);
    unlisted_problems_ = unlisted;
    resource_version_ = std::move(resource_version);
    synced_ = true;
    ++generation_;
    if (!thread_.joinable() && !stopping_) thread_ = std::thread([this] { Run(); });
  }
  wake_.notify_all();
  return true;
}

template <typename T>
void Informer<T>::Unsync(std::uint64_t generation, std::string why) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (generation != generation_) return;  // a newer list already replaced what this watched
  synced_ = false;
  last_failure_ = std::move(why);
}

template <typename T>
typename Informer<T>::Outcome Informer<T>::Handle(std::string_view line, std::uint64_t generation,
                                                  std::string& error) {
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return Outcome::kGoing;
  auto event = Kind<T>::Event(line);
  if (!event) {
    error = event.error();
    return Outcome::kBroken;
  }
  if (event->type == EventType::kError) {
    if (event->code == 410) return Outcome::kExpired;
    error = fmt::format("a watch ERROR event: {}", DescribeApiError(event->code, ""));
    if (!event->reason.empty()) error += " " + event->reason;
    if (!event->message.empty()) error += ": " + event->message;
    return Outcome::kBroken;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (generation != generation_ || !synced_) {
    error = "the cache is to be listed again";
    return Outcome::kBroken;
  }
  Mapped<T>& object = event->object;
  switch (event->type) {
    case EventType::kAdded:
    case EventType::kModified:
      // Ours, a problem, or no longer ours (a label removed, or another shard's role now):
      // the cache holds the latest.
      if (object.value && Kept(*object.value)) {
        objects_[object.key] = std::move(*object.value);
      } else {
        objects_.erase(object.key);
      }
      if (object.problem) {
        problems_[object.key] = {object.owner, std::move(*object.problem)};
      } else {
        problems_.erase(object.key);
      }
      break;
    case EventType::kDeleted:
      objects_.erase(object.key);
      problems_.erase(object.key);
      break;
    case EventType::kBookmark:
    case EventType::kError:
      break;
  }
  if (!event->resource_version.empty()) resource_version_ = std::move(event->resource_version);
  return Outcome::kGoing;
}

template <typename T>
void Informer<T>::Run() {
  std::unique_ptr<platform::ApiClient> client;
  std::uint64_t client_version = 0;
  HttpFailure last_failure = HttpFailure::kNone;
  auto backoff = tuning_.quick_end_backoff;
  platform::RetryPolicy policy = DefaultRetryPolicy();
  policy.max_attempts = 1;  // this loop decides what follows a failure
  policy.request_timeout =
      std::chrono::duration_cast<std::chrono::milliseconds>(tuning_.timeout + kWatchGrace);
  for (;;) {
    std::string resource_version;
    std::uint64_t generation = 0;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_.load() || synced_; });
      if (stopping_) return;
      resource_version = resource_version_;
      generation = generation_;
    }
    Connection connection = connection_();
    if (!client || connection.version != client_version) {
      platform::HttpTransport inner = transport_(connection.tls);
      client = std::make_unique<platform::ApiClient>(
          [inner, &last_failure](const HttpRequest& request, const std::atomic<bool>* cancelled,
                                 HttpFailure* failure) {
            auto response = inner(request, cancelled, failure);
            last_failure = *failure;
            return response;
          },
          policy, platform::ApiHeaders(), clock_);
      client_version = connection.version;
    }
    client->SetToken(connection.token);

    platform::ApiCall call;
    call.url =
        fmt::format("{}{}?watch=1&allowWatchBookmarks=true&timeoutSeconds={}&resourceVersion={}",
                    connection.server, path_, tuning_.timeout.count(), UrlEncode(resource_version));
    if (!query_.empty()) call.url += "&" + query_;
    call.max_body_bytes = kMaxRefusalBytes;
    call.idle_timeout = tuning_.stalled_after;
    std::string buffer, error;
    Outcome outcome = Outcome::kGoing;
    int events = 0;
    call.on_data = [&](std::string_view data) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        counts_.bytes += data.size();
      }
      buffer.append(data);
      std::size_t start = 0;
      for (std::size_t end; (end = buffer.find('\n', start)) != std::string::npos;
           start = end + 1) {
        outcome = Handle(std::string_view(buffer).substr(start, end - start), generation, error);
        ++events;
        if (outcome != Outcome::kGoing) return false;
      }
      buffer.erase(0, start);
      if (buffer.size() > kMaxEventBytes) {
        outcome = Outcome::kBroken;
        error = fmt::format("a watch event larger than {} MiB", kMaxEventBytes >> 20);
        return false;
      }
      return !stopping_.load();
    };
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++counts_.watches;
    }
    auto started = clock_.Now();
    auto response = client->Send(call, started + policy.request_timeout, &stopping_);
    if (stopping_) return;
    // The last line of a stream the server ended may lack its newline.
    if (response && response->status == 200 && outcome == Outcome::kGoing && !buffer.empty()) {
      outcome = Handle(buffer, generation, error);
      ++events;
    }
    const char* kind = Kind<T>::kName;
    std::unique_lock<std::mutex> lock(mutex_);
    if (!response && last_failure == HttpFailure::kTimeout) {
      // Stalled (or past its own timeout): watched again from the last resourceVersion seen.
      ++counts_.stalled;
      Log(LogLevel::kInfo, "kubernetes watch brought nothing for too long; restarting it",
          {{"path", path_}, {"kind", kind}});
      continue;
    }
    // A newer list (Relist) replaced what this watched: no failure, watched again from it.
    if (generation != generation_) continue;
    std::string why;
    if (!response) {
      why = client->Redact(response.error());
    } else if (response->status == 410 || outcome == Outcome::kExpired) {
      ++counts_.expired;
      why = fmt::format("GET {}: the watch's resourceVersion expired (410)", path_);
    } else if (response->status != 200) {
      why = fmt::format("GET {} (watch): {}", path_,
                        DescribeApiError(response->status, client->Redact(response->body),
                                         "get, list and watch on cronjobs and jobs"));
    } else if (outcome == Outcome::kBroken) {
      why = fmt::format("GET {} (watch): {}", path_, client->Redact(error));
    }
    if (!why.empty()) {
      if (outcome != Outcome::kExpired && !(response && response->status == 410)) {
        ++counts_.failed;
      }
      if (generation == generation_) {
        synced_ = false;
        last_failure_ = why;
      }
      Log(LogLevel::kInfo, "kubernetes watch ended; the next refresh lists again",
          {{"path", path_}, {"kind", kind}, {"why", why}});
      continue;
    }
    ++counts_.ended;
    if (events > 0 || clock_.Now() - started >= kQuickEnd) {
      backoff = tuning_.quick_end_backoff;
      continue;
    }
    // Ended at once with nothing: not in a tight loop against a server that does that.
    wake_.wait_for(lock, backoff, [this] { return stopping_.load(); });
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, kMaxQuickEndBackoff);
  }
}

template class Informer<CronJob>;
template class Informer<Job>;

}  // namespace schedwatch::kubernetes
