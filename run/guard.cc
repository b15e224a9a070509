#include "run/guard.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>

#include "run/record_writer.h"
#include "schedwatch/platform/api_client.h"
#include "schedwatch/platform/file.h"
#include "schedwatch/timefmt.h"
#include "sources/kubernetes/kube_objects.h"
#include "sources/kubernetes/kubernetes_source.h"

namespace schedwatch::run {

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// ---- flock ----

FlockGuard::FlockGuard(std::string directory, std::string role, std::string identity)
    : directory_(std::move(directory)),
      role_(role),
      path_(directory_ + "/" + role + ".lock"),
      identity_(std::move(identity)) {}

FlockGuard::~FlockGuard() { Release(); }

Result<GuardOutcome> FlockGuard::Acquire() {
  // The lock directory may be shared by the jobs' users: reached without another user's
  // links, and the lock file must be this user's (or root's).
  platform::ReadFailure failure;
  auto directory = platform::OpenGuarded(directory_, platform::OpenKind::kDirectory, &failure);
  if (!directory && failure == platform::ReadFailure::kNotFound) {
    if (auto made = MakeDirectories(directory_, 0755); !made) return Error{made.error()};
    directory = platform::OpenGuarded(directory_, platform::OpenKind::kDirectory, &failure);
  }
  if (!directory) return Error{directory.error()};
  auto attempt = platform::FileLock::TryLockOwnedAt(directory->get(), role_ + ".lock", path_, 0644);
  if (!attempt) return Error{attempt.error()};
  if (!attempt->lock) return GuardOutcome{false, attempt->holder};
  lock_ = std::move(attempt->lock);
  // For the copies that find it held: informative only, the lock itself is the flock.
  lock_->WriteNote(identity_ + "\n");
  return GuardOutcome{true, ""};
}

std::string FlockGuard::Release() {
  if (lock_) {
    lock_->WriteNote("");
    lock_.reset();  // releases the lock; the file stays, so no race on unlink
  }
  return "";
}

// ---- Lease ----

std::string MicroTime(double unix_seconds) {
  auto whole = static_cast<std::time_t>(std::floor(unix_seconds));
  int micros = static_cast<int>(std::llround((unix_seconds - whole) * 1e6));
  if (micros >= 1000000) ++whole, micros -= 1000000;
  std::tm tm{};
  gmtime_r(&whole, &tm);
  return fmt::format("{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}.{:06d}Z", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, micros);
}

std::string LeaseName(const std::string& role) {
  std::string name = "schedwatch-";
  for (char c : role) {
    name += c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  while (!name.empty() && name.back() == '-') name.pop_back();
  return name;
}

Result<LeaseView> ReadLease(std::string_view body, double now) {
  auto json = nlohmann::json::parse(body, nullptr, false);
  if (json.is_discarded() || !json.is_object()) return Error{"the Lease is not a JSON object"};
  LeaseView view;
  auto metadata = json.find("metadata");
  if (metadata == json.end() || !metadata->is_object()) return Error{"the Lease has no metadata"};
  auto version = metadata->find("resourceVersion");
  if (version == metadata->end() || !version->is_string() || version->get<std::string>().empty()) {
    return Error{"the Lease has no resourceVersion"};
  }
  view.resource_version = version->get<std::string>();
  if (auto labels = metadata->find("labels"); labels != metadata->end() && labels->is_object()) {
    if (auto role = labels->find("schedwatch.io/role");
        role != labels->end() && role->is_string()) {
      view.role = role->get<std::string>();
    }
  }
  auto spec = json.find("spec");
  if (spec == json.end() || !spec->is_object()) return view;  // nothing held
  auto text = [&](const char* key) {
    auto it = spec->find(key);
    return it != spec->end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (auto it = spec->find("leaseTransitions"); it != spec->end() && it->is_number_integer()) {
    view.transitions = it->get<int>();
  }
  view.holder = text("holderIdentity");
  if (view.holder.empty()) return view;  // released
  int duration = 0;
  if (auto it = spec->find("leaseDurationSeconds"); it != spec->end() && it->is_number_integer()) {
    duration = it->get<int>();
  }
  std::string renew = text("renewTime");
  if (renew.empty()) renew = text("acquireTime");
  auto renewed = ParseRfc3339(renew);
  // A holder without a readable renewal or duration never expires by our reading: treat it as
  // held (the safe side) rather than take it over.
  if (!renewed || duration <= 0) {
    view.state = LeaseView::State::kHeld;
    return view;
  }
  // renewTime is truncated to whole seconds here: one second of leeway toward "held".
  view.state = static_cast<double>(*renewed) + 1 + duration < now ? LeaseView::State::kExpired
                                                                  : LeaseView::State::kHeld;
  return view;
}

std::string LeaseBody(const std::string& name, const std::string& namespace_name,
                      const std::string& role, const std::string& holder, int duration_seconds,
                      double acquire_time, double renew_time, int transitions,
                      const std::string& resource_version) {
  nlohmann::json metadata = {
      {"name", name}, {"namespace", namespace_name}, {"labels", {{"schedwatch.io/role", role}}}};
  if (!resource_version.empty()) metadata["resourceVersion"] = resource_version;
  nlohmann::json spec = {{"leaseTransitions", transitions}};
  if (holder.empty()) {
    spec["holderIdentity"] = nullptr;  // released: the next copy takes it without waiting
  } else {
    spec["holderIdentity"] = holder;
    spec["leaseDurationSeconds"] = duration_seconds;
    spec["acquireTime"] = MicroTime(acquire_time);
    spec["renewTime"] = MicroTime(renew_time);
  }
  nlohmann::json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                          {"kind", "Lease"},
                          {"metadata", metadata},
                          {"spec", spec}};
  return lease.dump();
}

LeaseGuard::LeaseGuard(LeaseOptions options)
    : options_(std::move(options)),
      name_(LeaseName(options_.role)),
      client_(std::make_unique<HttpClient>(options_.access.tls)) {}

LeaseGuard::~LeaseGuard() {
  if (held_) Release();
}

std::string LeaseGuard::CollectionUrl() const {
  return fmt::format("{}/apis/coordination.k8s.io/v1/namespaces/{}/leases", options_.access.server,
                     UrlEncode(options_.namespace_name));
}

std::string LeaseGuard::LeaseUrl() const { return CollectionUrl() + "/" + UrlEncode(name_); }

Result<HttpResponse> LeaseGuard::Send(const std::string& method, const std::string& url,
                                      const std::string& body) {
  auto token = kubernetes::BearerToken(options_.access);
  if (!token) return Error{token.error()};
  HttpRequest request;
  request.method = method;
  request.url = url;
  request.body = body;
  request.timeout = options_.request_timeout;
  request.connect_timeout = options_.request_timeout;
  request.max_body_bytes = 1u << 20;
  platform::ApiHeaders headers;
  headers.product = "schedwatch_run";
  request.headers = platform::DefaultHeaders(headers, *token);
  if (!body.empty()) request.headers.emplace_back("Content-Type", "application/json");
  auto response = client_->Send(request);
  if (!response) return Error{RedactSecret(response.error(), *token)};
  return response;
}

Result<GuardOutcome> LeaseGuard::Acquire() {
  const std::string what = fmt::format("lease {}/{}", options_.namespace_name, name_);
  auto describe = [&](const char* method, const HttpResponse& response) {
    return fmt::format(
        "{} {}: {}", method, what,
        kubernetes::DescribeApiError(response.status, response.body,
                                     "get, create and update on leases (coordination.k8s.io)"));
  };
  auto got = Send("GET", LeaseUrl(), "");
  if (!got) return Error{got.error()};
  double now = NowSeconds();
  if (got->status == 404) {
    auto created = Send("POST", CollectionUrl(),
                        LeaseBody(name_, options_.namespace_name, options_.role, options_.identity,
                                  options_.duration_seconds, now, now, 0, ""));
    if (!created) return Error{created.error()};
    if (created->status == 409) return GuardOutcome{false, "another copy (created it first)"};
    if (created->status != 201 && created->status != 200) return Error{describe("POST", *created)};
    auto view = ReadLease(created->body, now);
    if (!view) return Error{fmt::format("POST {}: {}", what, view.error())};
    std::lock_guard<std::mutex> lock(mutex_);
    resource_version_ = view->resource_version;
    acquire_time_ = now;
    held_ = true;
    return GuardOutcome{true, ""};
  }
  if (got->status != 200) return Error{describe("GET", *got)};
  auto view = ReadLease(got->body, now);
  if (!view) return Error{fmt::format("GET {}: {}", what, view.error())};
  if (!view->role.empty() && view->role != options_.role) {
    return Error{
        fmt::format("{} belongs to role \"{}\", not \"{}\"", what, view->role, options_.role)};
  }
  if (view->state == LeaseView::State::kHeld) return GuardOutcome{false, view->holder};
  int transitions = view->transitions + (view->holder.empty() ? 0 : 1);
  auto updated =
      Send("PUT", LeaseUrl(),
           LeaseBody(name_, options_.namespace_name, options_.role, options_.identity,
                     options_.duration_seconds, now, now, transitions, view->resource_version));
  if (!updated) return Error{updated.error()};
  // Someone else wrote it since our read: they won the race.
  if (updated->status == 409) return GuardOutcome{false, "another copy (took it over first)"};
  if (updated->status != 200) return Error{describe("PUT", *updated)};
  auto mine = ReadLease(updated->body, now);
  if (!mine) return Error{fmt::format("PUT {}: {}", what, mine.error())};
  std::lock_guard<std::mutex> lock(mutex_);
  resource_version_ = mine->resource_version;
  transitions_ = transitions;
  acquire_time_ = now;
  held_ = true;
  return GuardOutcome{true, ""};
}

Result<bool> LeaseGuard::Renew() {
  std::string version;
  int transitions;
  double acquired;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    version = resource_version_, transitions = transitions_, acquired = acquire_time_;
  }
  double now = NowSeconds();
  auto updated = Send("PUT", LeaseUrl(),
                      LeaseBody(name_, options_.namespace_name, options_.role, options_.identity,
                                options_.duration_seconds, acquired, now, transitions, version));
  if (!updated) return Error{updated.error()};
  if (updated->status == 409) {
    // Changed since our last write: still ours only if the holder is still us.
    auto got = Send("GET", LeaseUrl(), "");
    if (!got) return Error{got.error()};
    auto view = got->status == 200 ? ReadLease(got->body, now) : Result<LeaseView>(Error{""});
    if (!view || view->holder != options_.identity) {
      return Error{fmt::format("lost the lease to {}", view ? view->holder : "another copy")};
    }
    std::lock_guard<std::mutex> lock(mutex_);
    resource_version_ = view->resource_version;
    return false;  // retried at the next tick
  }
  if (updated->status != 200) {
    return Error{fmt::format(
        "renewing: {}", kubernetes::DescribeApiError(updated->status, updated->body,
                                                     "update on leases (coordination.k8s.io)"))};
  }
  auto view = ReadLease(updated->body, now);
  if (!view) return Error{view.error()};
  std::lock_guard<std::mutex> lock(mutex_);
  resource_version_ = view->resource_version;
  return true;
}

void LeaseGuard::StartKeeping() {
  keeper_ = std::thread([this] {
    auto interval = std::chrono::milliseconds(options_.duration_seconds * 1000 / 3);
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_cv_.wait_for(lock, interval, [this] { return stop_; })) {
      lock.unlock();
      auto renewed = Renew();
      lock.lock();
      if (renewed && *renewed) error_.clear();  // a passing failure that did no harm
      if (!renewed) {
        // Not fatal while the lease has not expired: the next tick tries again. A lost lease
        // is final.
        if (error_.empty() || renewed.error().rfind("lost", 0) == 0) error_ = renewed.error();
        std::string message = renewed.error();
        lock.unlock();
        fmt::print(stderr, "schedwatch_run: role={} lease renewal failed: {}\n", options_.role,
                   message);
        lock.lock();
        if (message.rfind("lost", 0) == 0) break;
      }
    }
  });
}

std::string LeaseGuard::Release() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (keeper_.joinable()) keeper_.join();
  std::string error;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    error = error_;
    if (!held_ || error.rfind("lost", 0) == 0) {
      held_ = false;
      return error;
    }
    held_ = false;
  }
  auto released = Send("PUT", LeaseUrl(),
                       LeaseBody(name_, options_.namespace_name, options_.role, "",
                                 options_.duration_seconds, 0, 0, transitions_, resource_version_));
  std::string failure;
  if (!released) {
    failure = released.error();
  } else if (released->status != 200) {
    failure = fmt::format("releasing: {}",
                          kubernetes::DescribeApiError(released->status, released->body,
                                                       "update on leases (coordination.k8s.io)"));
  }
  if (!failure.empty()) {
    // Logged, not recorded: the run was guarded throughout; the Lease expires by itself.
    fmt::print(stderr, "schedwatch_run: role={} lease not released ({}); it expires in {}s\n",
               options_.role, failure, options_.duration_seconds);
  }
  return error;
}

}  // namespace schedwatch::run
