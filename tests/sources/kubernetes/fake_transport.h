// An in-process stand-in for the Kubernetes API server's list endpoints (batch/v1 CronJobs and
// Jobs), behind the kubernetes source's transport seam: the C++ unit tests run without
// sockets, TLS or sleeps. It speaks the subset of fake_apiserver.py's config that lists need
// (that script stays the peer of the real-TLS end-to-end tests):
//   {"token": "t",                    the bearer token accepted; absent: none needed
//    "client_cert_pem": "...",        a client certificate (TlsOptions) accepted instead
//    "unreachable": true,             every request fails to connect
//    "cronjobs": [...], "jobs": [...],
//    "faults": [{"path": "...", "continue": true, "times": 1,
//                "delay": 3.0,        seconds the answer takes (on the fake clock); past the
//                                     request's timeout it is a timeout
//                "status": 403, "reason": "Forbidden", "message": "...", "headers": {...},
//                "raw": "{not json"}]}
// Lists honour limit, continue (410 Expired for a token of an older config) and a labelSelector
// (`key`, `key=value` or `key in (a,b)`). Watches (watch=1) stream the events of Put and Remove
// after their resourceVersion as JSON lines, with bookmarks (Bookmark), an ERROR 410 event for
// a resourceVersion older than the last compaction (Compact, SetConfig), and end when the
// server closes them (CloseWatches), at timeoutSeconds or, while Stall holds them, after the
// request's idle_timeout: both on the fake clock. A fault with "watch": true applies to
// watches only; faults without it to lists only.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "schedwatch/platform/clock.h"
#include "sources/kubernetes/kubernetes_source.h"
#include "tests/fixtures/canned_http.h"

namespace schedwatch::testing {

class FakeKubernetes {
 public:
  using Json = nlohmann::json;
  static constexpr const char* kUrl = "https://kube.test:6443";

  explicit FakeKubernetes(Json config, platform::FakeClock* clock = nullptr) : clock_(clock) {
    SetConfig(std::move(config));
  }

  // Replaces the world and the faults; continue tokens and watches of the old world expire.
  void SetConfig(Json config) {
    std::lock_guard<std::mutex> lock(mutex_);
    config_ = std::move(config);
    ++generation_;
    compacted_ = ++resource_version_;
    events_.clear();
    ++close_epoch_;
    for (const char* kind : {"cronjobs", "jobs"}) {
      auto& items = items_[kind];
      items.clear();
      if (config_.contains(kind)) items = config_[kind].get<std::vector<Json>>();
      std::stable_sort(items.begin(), items.end(),
                       [](const Json& a, const Json& b) { return SortKey(a) < SortKey(b); });
    }
  }

  // The source's transport seam: every TlsOptions it was given is kept.
  kubernetes::TransportFactory Factory() {
    return [this](const TlsOptions& tls) -> platform::HttpTransport {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        tls_.push_back(tls);
      }
      return [this, tls](const HttpRequest& request, const std::atomic<bool>* cancelled,
                         HttpFailure* failure) -> Result<HttpResponse> {
        auto answer = Answer(request, tls, failure, cancelled);
        // As HttpClient: a 2xx list page goes to a streaming caller as it arrives (here in
        // pieces of varying sizes, to cut it anywhere), not kept, and not capped.
        if (answer && request.on_data && answer->status >= 200 && answer->status < 300 &&
            !answer->body.empty()) {
          std::string_view body = answer->body;
          for (std::size_t at = 0, piece = 1; at < body.size();
               at += piece, piece = piece * 7 % 1031 + 1) {
            if (!request.on_data(body.substr(at, piece))) break;
          }
          answer->body.clear();
          return answer;
        }
        // As HttpClient: a body past the request's cap is a failure, not an answer.
        if (answer && answer->body.size() > request.max_body_bytes) {
          if (failure != nullptr) *failure = HttpFailure::kTooLarge;
          return Error{fmt::format("GET {}: the answer is larger than {} bytes",
                                   UrlPathForMessages(request.url), request.max_body_bytes)};
        }
        return answer;
      };
    };
  }

  // Creates or replaces (by uid) an item of "cronjobs" or "jobs": an ADDED or MODIFIED event.
  void Put(const std::string& kind, Json item) {
    std::lock_guard<std::mutex> lock(mutex_);
    item["metadata"]["resourceVersion"] = std::to_string(++resource_version_);
    auto& items = items_[kind];
    auto it = std::find_if(items.begin(), items.end(),
                           [&](const Json& other) { return Uid(other) == Uid(item); });
    events_.push_back({resource_version_, kind, it == items.end() ? "ADDED" : "MODIFIED", item});
    if (it == items.end()) {
      items.push_back(item);
      std::stable_sort(items.begin(), items.end(),
                       [](const Json& a, const Json& b) { return SortKey(a) < SortKey(b); });
    } else {
      *it = std::move(item);
    }
  }
  // Deletes the item with `uid`: a DELETED event.
  void Remove(const std::string& kind, const std::string& uid) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& items = items_[kind];
    auto it = std::find_if(items.begin(), items.end(),
                           [&](const Json& other) { return Uid(other) == uid; });
    if (it == items.end()) return;
    Json item = *it;
    items.erase(it);
    item["metadata"]["resourceVersion"] = std::to_string(++resource_version_);
    events_.push_back({resource_version_, kind, "DELETED", item});
  }
  // A BOOKMARK at the current resourceVersion to every watch.
  void Bookmark() {
    std::lock_guard<std::mutex> lock(mutex_);
    events_.push_back({++resource_version_, "*", "BOOKMARK", Json::object()});
  }
  // Forgets the events so far: a watch from an older resourceVersion gets an ERROR 410.
  void Compact() {
    std::lock_guard<std::mutex> lock(mutex_);
    compacted_ = resource_version_;
    events_.clear();
  }
  // Ends the open watches as the server does at timeoutSeconds.
  void CloseWatches() {
    std::lock_guard<std::mutex> lock(mutex_);
    ++close_epoch_;
  }
  // While stalled, watches send nothing (the connection stays open).
  void Stall(bool stalled) {
    std::lock_guard<std::mutex> lock(mutex_);
    stalled_ = stalled;
  }
  int OpenWatches() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return open_watches_;
  }

  // Every request: {"host", "path", "query": {...}, "authorization", "accept"}.
  std::vector<Json> Requests() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return requests_;
  }
  std::vector<TlsOptions> Tls() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return tls_;
  }
  // Runs after each request is recorded (a test may cancel the read there).
  void OnRequest(std::function<void(std::size_t count)> hook) { on_request_ = std::move(hook); }

 private:
  static std::pair<std::string, std::string> SortKey(const Json& item) {
    auto field = [&item](const char* name) {
      if (!item.is_object() || !item.contains("metadata") || !item["metadata"].is_object())
        return std::string();
      const Json& metadata = item["metadata"];
      return metadata.contains(name) && metadata[name].is_string()
                 ? metadata[name].get<std::string>()
                 : std::string();
    };
    return {field("namespace"), field("name")};
  }

  static std::string Uid(const Json& item) {
    if (!item.is_object() || !item.contains("metadata") || !item["metadata"].is_object()) return {};
    return item["metadata"].value("uid", "");
  }

  static std::string Decode(std::string_view text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '%' && i + 2 < text.size()) {
        out += static_cast<char>(std::stoi(std::string(text.substr(i + 1, 2)), nullptr, 16));
        i += 2;
      } else {
        out += text[i];
      }
    }
    return out;
  }

  static Json Status(long code, const std::string& reason, const std::string& message) {
    Json body = {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", Json::object()},
                 {"status", "Failure"}, {"message", message}, {"reason", reason},
                 {"code", code}};
    if (code == 410) body["metadata"]["continue"] = "bm90LXVzZWQ=";
    return body;
  }

  static HttpResponse Respond(long status, std::string body,
                              const std::map<std::string, std::string>& headers = {}) {
    HttpResponse response;
    response.status = status;
    response.body = std::move(body);
    response.headers["content-type"] = "application/json";
    for (const auto& [name, value] : headers) {
      std::string lower = name;
      std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
      response.headers[lower] = value;
    }
    return response;
  }

  Result<HttpResponse> Answer(const HttpRequest& request, const TlsOptions& tls,
                              HttpFailure* failure, const std::atomic<bool>* cancelled) {
    std::unique_lock<std::mutex> lock(mutex_);
    *failure = HttpFailure::kNone;
    std::string url = request.url;
    std::string host = url.substr(0, url.find('/', url.find("://") + 3));
    std::string rest = url.substr(host.size());
    std::string path = rest.substr(0, rest.find('?'));
    std::map<std::string, std::string> query;
    if (auto mark = rest.find('?'); mark != std::string::npos) {
      std::string_view text = std::string_view(rest).substr(mark + 1);
      while (!text.empty()) {
        std::string_view pair = text.substr(0, text.find('&'));
        text.remove_prefix(std::min(text.size(), pair.size() + 1));
        auto equals = pair.find('=');
        query[std::string(pair.substr(0, equals))] =
            equals == std::string_view::npos ? "" : Decode(pair.substr(equals + 1));
      }
    }
    std::string authorization = RequestHeader(request, "Authorization");
    requests_.push_back({{"host", host},
                         {"path", path},
                         {"query", query},
                         {"authorization", authorization},
                         {"accept", RequestHeader(request, "Accept")}});
    std::size_t count = requests_.size();
    auto hook = on_request_;
    lock.unlock();
    if (hook) hook(count);
    lock.lock();

    const std::string where = request.method + " " + path;
    if (config_.value("unreachable", false)) {
      *failure = HttpFailure::kConnect;
      return Error{where + ": Failed to connect to kube.test port 6443: Connection refused"};
    }
    bool authenticated = (!config_.contains("token") && !config_.contains("client_cert_pem")) ||
                         (config_.contains("token") &&
                          authorization == "Bearer " + config_["token"].get<std::string>()) ||
                         (config_.contains("client_cert_pem") &&
                          tls.client_cert_pem == config_["client_cert_pem"].get<std::string>());
    if (!authenticated) return Respond(401, Status(401, "Unauthorized", "Unauthorized").dump());

    bool watch = query.count("watch") > 0 && query.at("watch") == "1";
    if (Json* fault = TakeFault(path, query.count("continue") > 0, watch)) {
      if (fault->contains("delay")) {
        auto delay =
            std::chrono::milliseconds(static_cast<long>((*fault)["delay"].get<double>() * 1000));
        if (delay > request.timeout) {
          if (clock_ != nullptr) clock_->Advance(request.timeout);
          *failure = HttpFailure::kTimeout;
          return Error{fmt::format("{}: Operation timed out after {} milliseconds", where,
                                   request.timeout.count())};
        }
        if (clock_ != nullptr) clock_->Advance(delay);
      }
      std::map<std::string, std::string> headers;
      if (fault->contains("headers")) headers = (*fault)["headers"].get<decltype(headers)>();
      if (fault->contains("raw")) {
        return Respond(fault->value("status", 200L), (*fault)["raw"].get<std::string>(), headers);
      }
      if (fault->contains("status")) {
        long code = (*fault)["status"].get<long>();
        return Respond(
            code,
            Status(code, fault->value("reason", "InternalError"),
                   fault->value("message", "an error on the server has prevented the request"))
                .dump(),
            headers);
      }
    }
    if (watch) return Watch(lock, request, path, query, failure, cancelled);
    return List(path, query);
  }

  // Whether `item` is in the namespace of the request (all: "") and matches `selector`.
  static bool Selected(const Json& item, const std::string& namespace_name,
                       const std::string& selector) {
    const Json* metadata =
        item.is_object() && item.contains("metadata") ? &item["metadata"] : nullptr;
    if (!namespace_name.empty() &&
        (metadata == nullptr || metadata->value("namespace", "") != namespace_name)) {
      return false;
    }
    if (selector.empty()) return true;
    if (metadata == nullptr || !metadata->is_object() || !metadata->contains("labels") ||
        !(*metadata)["labels"].is_object()) {
      return false;
    }
    const Json& labels = (*metadata)["labels"];
    auto in = selector.find(" in (");
    auto equals = selector.find('=');
    if (in != std::string::npos) {
      std::string key = selector.substr(0, in);
      if (!labels.contains(key) || !labels[key].is_string()) return false;
      std::string values = selector.substr(in + 5, selector.size() - in - 6) + ",";
      return values.find(labels[key].get<std::string>() + ",") == 0 ||
             values.find("," + labels[key].get<std::string>() + ",") != std::string::npos;
    }
    if (equals != std::string::npos) {
      std::string key = selector.substr(0, equals);
      return labels.contains(key) && labels[key] == selector.substr(equals + 1);
    }
    return labels.contains(selector);
  }

  static std::pair<std::string, std::string> Scope(const std::string& path) {
    const std::string prefix = "/apis/batch/v1/";
    std::string namespace_name, kind = path.substr(std::min(path.size(), prefix.size()));
    if (kind.rfind("namespaces/", 0) == 0) {
      auto slash = kind.find('/', 11);
      namespace_name = kind.substr(11, slash - 11);
      kind = slash == std::string::npos ? "" : kind.substr(slash + 1);
    }
    return {namespace_name, kind};
  }

  // A watch: events after the request's resourceVersion, as lines, until it ends.
  Result<HttpResponse> Watch(std::unique_lock<std::mutex>& lock, const HttpRequest& request,
                             const std::string& path,
                             const std::map<std::string, std::string>& query, HttpFailure* failure,
                             const std::atomic<bool>* cancelled) {
    auto [namespace_name, kind] = Scope(path);
    std::string selector = query.count("labelSelector") ? query.at("labelSelector") : "";
    HttpResponse response = Respond(200, "");
    auto send = [&](const std::string& line) {
      if (request.on_data) return request.on_data(line + "\n");
      response.body += line + "\n";
      return true;
    };
    long long from = std::stoll(query.count("resourceVersion") ? query.at("resourceVersion") : "0");
    if (from < compacted_) {
      lock.unlock();
      send(Json({{"type", "ERROR"},
                 {"object", Status(410, "Expired",
                                   "too old resource version: " + std::to_string(from) + " (" +
                                       std::to_string(compacted_) + ")")}})
               .dump());
      return response;
    }
    bool bookmarks =
        query.count("allowWatchBookmarks") && query.at("allowWatchBookmarks") == "true";
    auto timeout = std::chrono::seconds(
        query.count("timeoutSeconds") ? std::stoll(query.at("timeoutSeconds")) : 1800);
    auto started = clock_ != nullptr ? clock_->Now() : platform::Clock::TimePoint();
    auto last_sent = started;
    int epoch = close_epoch_;
    ++open_watches_;
    long long sent = from;
    for (;;) {
      std::vector<std::string> lines;
      if (!stalled_) {
        for (const auto& event : events_) {
          if (event.resource_version <= sent) continue;
          if (event.kind == "*") {
            if (bookmarks) {
              lines.push_back(
                  Json({{"type", "BOOKMARK"},
                        {"object",
                         {{"kind", kind == "jobs" ? "Job" : "CronJob"},
                          {"apiVersion", "batch/v1"},
                          {"metadata",
                           {{"resourceVersion", std::to_string(event.resource_version)}}}}}})
                      .dump());
            }
          } else if (event.kind == kind && Selected(event.object, namespace_name, selector)) {
            lines.push_back(Json({{"type", event.type}, {"object", event.object}}).dump());
          }
        }
        if (!events_.empty()) sent = std::max(sent, events_.back().resource_version);
      }
      lock.unlock();
      bool going = true;
      for (const auto& line : lines) going = going && send(line);
      lock.lock();
      if (!lines.empty() && clock_ != nullptr) last_sent = clock_->Now();
      auto end = [&](Result<HttpResponse> result) {
        --open_watches_;
        return result;
      };
      if (!going) return end(response);
      if (close_epoch_ != epoch) return end(response);
      if (cancelled != nullptr && cancelled->load()) {
        *failure = HttpFailure::kCancelled;
        return end(Error{"GET " + path + ": cancelled"});
      }
      if (clock_ != nullptr) {
        auto now = clock_->Now();
        if (request.idle_timeout.count() > 0 && now - last_sent > request.idle_timeout) {
          *failure = HttpFailure::kTimeout;
          return end(Error{"GET " + path + ": no data for " +
                           std::to_string(request.idle_timeout.count()) + " ms"});
        }
        if (now - started >= timeout) return end(response);
      }
      wake_.wait_for(lock, std::chrono::milliseconds(2));
    }
  }

  Json* TakeFault(const std::string& path, bool has_continue, bool watch) {
    if (!config_.contains("faults")) return nullptr;
    for (Json& fault : config_["faults"]) {
      if (fault.value("watch", false) != watch) continue;
      if (fault.contains("path") && fault["path"] != path) continue;
      if (fault.contains("continue") && fault["continue"].get<bool>() != has_continue) continue;
      if (fault.contains("times")) {
        if (fault["times"].get<int>() <= 0) continue;
        fault["times"] = fault["times"].get<int>() - 1;
      }
      return &fault;
    }
    return nullptr;
  }

  HttpResponse List(const std::string& path, const std::map<std::string, std::string>& query) {
    const std::string prefix = "/apis/batch/v1/";
    auto [namespace_name, kind] = Scope(path);
    if (path.rfind(prefix, 0) != 0 || (kind != "cronjobs" && kind != "jobs")) {
      return Respond(
          404, Status(404, "NotFound", "the server could not find the requested resource").dump());
    }
    std::string selector = query.count("labelSelector") ? query.at("labelSelector") : "";
    std::vector<const Json*> items;
    for (const Json& item : items_[kind]) {
      if (Selected(item, namespace_name, selector)) items.push_back(&item);
    }
    std::size_t start = 0;
    if (query.count("continue")) {
      const std::string& token = query.at("continue");
      auto dot = token.find('.');
      if (dot == std::string::npos) {
        return Respond(400, Status(400, "BadRequest", "invalid continue").dump());
      }
      if (std::stoi(token.substr(0, dot)) != generation_) {
        return Respond(410, Status(410, "Expired",
                                   "The provided continue parameter is too old to display a "
                                   "consistent list result.")
                                .dump());
      }
      start = std::stoul(token.substr(dot + 1));
    }
    std::size_t limit = query.count("limit") ? std::stoul(query.at("limit")) : 0;
    std::size_t end = limit == 0 ? items.size() : std::min(items.size(), start + limit);
    Json body = {{"kind", kind == "cronjobs" ? "CronJobList" : "JobList"},
                 {"apiVersion", "batch/v1"},
                 {"metadata", {{"resourceVersion", std::to_string(resource_version_)}}},
                 {"items", Json::array()}};
    for (std::size_t i = start; i < end; ++i) body["items"].push_back(*items[i]);
    if (end < items.size()) {
      body["metadata"]["continue"] = fmt::format("{}.{}", generation_, end);
    }
    return Respond(200, body.dump());
  }

  struct Event {
    long long resource_version;
    std::string kind;  // "cronjobs", "jobs", "*" for a bookmark
    std::string type;
    Json object;
  };

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  long long resource_version_ = 884213;
  long long compacted_ = 0;
  std::vector<Event> events_;
  int close_epoch_ = 0;
  bool stalled_ = false;
  int open_watches_ = 0;
  platform::FakeClock* clock_;
  Json config_;
  int generation_ = 0;
  std::map<std::string, std::vector<Json>> items_;
  std::vector<Json> requests_;
  std::vector<TlsOptions> tls_;
  std::function<void(std::size_t)> on_request_;
};

}  // namespace schedwatch::testing
