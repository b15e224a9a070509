// The per-role guard of schedwatch_run: a flock on a host, a coordination.k8s.io/v1 Lease in a
// cluster. Taking it either succeeds, finds it held by another copy (that copy skips its run),
// or fails (the --on-guard-error policy decides).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "schedwatch/platform/file_lock.h"
#include "schedwatch/platform/http_client.h"
#include "schedwatch/result.h"
#include "sources/kubernetes/kube_config.h"

namespace schedwatch::run {

struct GuardOutcome {
  bool acquired = false;
  std::string held_by;  // when not acquired: the holder, if it said
};

class Guard {
 public:
  virtual ~Guard() = default;
  // An Error means the guard could not be consulted at all.
  virtual Result<GuardOutcome> Acquire() = 0;
  // Keeps the guard while the command runs (a Lease is renewed); a failure seen meanwhile is
  // returned by Release.
  virtual void StartKeeping() {}
  // Gives the guard back; returns what went wrong while holding or releasing it ("" if nothing).
  virtual std::string Release() = 0;
  virtual std::string Kind() const = 0;
};

// flock(LOCK_EX | LOCK_NB) on `<directory>/<role>.lock`, a file of this user's or root's
// reached without another user's links (a stranger's lock file is a guard error, not a holder). The
// descriptor is close-on-exec, so only this process holds the lock; the kernel releases it when the
// process dies, however.
class FlockGuard : public Guard {
 public:
  FlockGuard(std::string directory, std::string role, std::string identity);
  ~FlockGuard() override;
  Result<GuardOutcome> Acquire() override;
  std::string Release() override;
  std::string Kind() const override { return "flock"; }
  const std::string& path() const { return path_; }

 private:
  std::string directory_, role_, path_, identity_;
  std::unique_ptr<platform::FileLock> lock_;
};

// What a Lease read from the API server says, judged at `now` (Unix seconds).
struct LeaseView {
  enum class State { kFree, kExpired, kHeld };
  State state = State::kFree;
  std::string holder;
  std::string resource_version;
  std::string role;  // the schedwatch.io/role label: tells two roles that map to one name apart
  int transitions = 0;
};
Result<LeaseView> ReadLease(std::string_view body, double now);

// A Lease's name for a role: lower case, '_' as '-', prefixed "schedwatch-" (a DNS label).
std::string LeaseName(const std::string& role);

// The Lease JSON a holder sends (create without resource_version, update with it).
std::string LeaseBody(const std::string& name, const std::string& namespace_name,
                      const std::string& role, const std::string& holder, int duration_seconds,
                      double acquire_time, double renew_time, int transitions,
                      const std::string& resource_version);

// "2026-01-01T00:00:00.123456Z": the API's MicroTime.
std::string MicroTime(double unix_seconds);

struct LeaseOptions {
  kubernetes::ClusterAccess access;
  std::string namespace_name;
  std::string role;
  std::string identity;  // holderIdentity: "<host>_<pid>"
  int duration_seconds = 60;
  std::chrono::milliseconds request_timeout{std::chrono::seconds(10)};
};

// A Lease named after the role: created when absent, taken over only when expired or released
// (an update carrying the resourceVersion read, so of two racing copies one gets 409 and
// skips), renewed every duration/3 while the command runs, released by clearing holderIdentity.
// RBAC: get, create and update on leases in group coordination.k8s.io.
class LeaseGuard : public Guard {
 public:
  explicit LeaseGuard(LeaseOptions options);
  ~LeaseGuard() override;
  Result<GuardOutcome> Acquire() override;
  void StartKeeping() override;
  std::string Release() override;
  std::string Kind() const override { return "lease"; }

 private:
  Result<HttpResponse> Send(const std::string& method, const std::string& url,
                            const std::string& body);
  std::string LeaseUrl() const;
  std::string CollectionUrl() const;
  // Renews once; an Error when the Lease is no longer ours or cannot be written.
  Result<bool> Renew();

  LeaseOptions options_;
  std::string name_;
  std::unique_ptr<HttpClient> client_;
  std::mutex mutex_;  // resource_version_, transitions_, acquire_time_, error_
  std::string resource_version_;
  int transitions_ = 0;
  double acquire_time_ = 0;
  std::string error_;
  bool held_ = false;
  std::thread keeper_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
};

double NowSeconds();

}  // namespace schedwatch::run
