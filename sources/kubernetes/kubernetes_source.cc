#include "sources/kubernetes/kubernetes_source.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "schedwatch/platform/log.h"
#include "sources/absence.h"
#include "sources/kubernetes/kube_api.h"
#include "sources/kubernetes/kube_config.h"
#include "sources/kubernetes/kube_objects.h"
#include "sources/kubernetes/kube_watch.h"
#include "sources/problems.h"

namespace schedwatch::kubernetes {
namespace {

// Listing Jobs namespace by namespace beats a cluster-wide list when the labelled CronJobs
// live in a few namespaces of a large cluster; past this many, one cluster-wide list is cheaper.
constexpr std::size_t kMaxJobNamespaces = 5;
// Without a timeout key the refresher's cancellation ends a slow read; this is a backstop.
constexpr std::chrono::minutes kBackstopTimeout{5};
constexpr std::chrono::seconds kDefaultRequestTimeout{10};
// Roles per confirming list: `schedwatch.io/role in (...)` stays a short URL.
constexpr std::size_t kRolesPerConfirmingList = 40;

// A label value the API server accepts (at most 63 of [A-Za-z0-9._-], alphanumeric at both
// ends): a role that is none cannot be on any CronJob, so no list is asked for it.
bool IsLabelValue(const std::string& value) {
  if (value.empty() || value.size() > 63) return false;
  auto alphanumeric = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (!alphanumeric(value.front()) || !alphanumeric(value.back())) return false;
  return std::all_of(value.begin(), value.end(),
                     [&](char c) { return alphanumeric(c) || c == '-' || c == '_' || c == '.'; });
}

std::string ListPath(const std::string& namespace_name, const char* resource) {
  if (namespace_name.empty()) return fmt::format("/apis/batch/v1/{}", resource);
  return fmt::format("/apis/batch/v1/namespaces/{}/{}", namespace_name, resource);
}

// Lists `resource` in every scope ("" for all namespaces) into `items`, adding the problems of
// its pages, each page read as it streams by a stream `start(on_item)` makes. A page's items are
// kept once the page was read whole; when a list restarts, what its earlier pages gave is
// dropped first. A list of which no item could be read is a failed read, never an empty list.
template <typename T, typename StartStream>
Result<bool> ListEvery(ApiLister& lister, const std::vector<std::string>& scopes,
                       const char* resource, const std::string& query, StartStream start,
                       std::vector<T>& items, ProblemSink& problems) {
  for (const auto& scope : scopes) {
    std::size_t first_item = items.size(), seen = 0;
    std::vector<T> page_items;
    // Item problems, a few listed per reason and the rest counted.
    ProblemSink page_problems(kMaxListedItemProblems), list_problems(kMaxListedItemProblems);
    std::string first_problem, page_first_problem;
    auto listed = lister.List(
        ListPath(scope, resource), query,
        [&] {
          page_items.clear();
          page_problems.Clear();
          page_first_problem.clear();
          return start([&](Mapped<T> mapped) {
            if (mapped.value) page_items.push_back(std::move(*mapped.value));
            if (!mapped.problem) return;
            if (page_problems.Total() == 0) page_first_problem = mapped.problem->message;
            page_problems.Add(std::move(*mapped.problem));
          });
        },
        [&](const PageEnd& page) {
          std::move(page_items.begin(), page_items.end(), std::back_inserter(items));
          page_items.clear();
          if (first_problem.empty()) first_problem = page_first_problem;
          list_problems.Merge(page_problems);
          page_problems.Clear();
          seen += page.listed;
          return page.continue_token;
        },
        [&] {
          items.resize(first_item);
          list_problems.Clear();
          first_problem.clear();
          seen = 0;
        });
    if (!listed) return listed;
    if (auto unreadable = NothingReadable(seen, list_problems.Total(), first_problem, resource)) {
      return Error{fmt::format("GET {}: {}", ListPath(scope, resource), *unreadable)};
    }
    problems.Merge(list_problems);
  }
  return true;
}

// A stream of a CronJobList page for ListEvery.
PageStream StartCronJobs(std::function<void(Mapped<CronJob>)> on_item) {
  return StreamCronJobList(std::move(on_item));
}

PageStream StartEveryCronJob(std::function<void(Mapped<CronJob>)> on_item) {
  return StreamEveryCronJobList(std::move(on_item));
}

// The Jobs a shard's Job caches keep: those of its CronJobs at the last read (their uids). An
// owner whose Jobs were dropped is remembered (a hash of its uid): when it becomes one of the
// shard's CronJobs (its role label changed, or its Jobs came before it), the Jobs are listed
// again, or its runs so far would stay unseen.
class JobOwners {
 public:
  bool Keep(const Job& job) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (owners_.count(job.owner_uid) > 0) return true;
    dropped_.insert(std::hash<std::string>()(job.owner_uid));
    return false;
  }
  // The shard's CronJobs now; true when Jobs of one of them were dropped (the caller lists the
  // Jobs again, which drops the others' again).
  bool Set(std::unordered_set<std::string> owners) {
    std::lock_guard<std::mutex> lock(mutex_);
    owners_ = std::move(owners);
    bool relist = std::any_of(owners_.begin(), owners_.end(), [this](const std::string& uid) {
      return dropped_.count(std::hash<std::string>()(uid)) > 0;
    });
    if (relist) dropped_.clear();
    return relist;
  }

 private:
  std::mutex mutex_;
  std::unordered_set<std::string> owners_;
  std::unordered_set<std::size_t> dropped_;
};

// What identifies a version of the kubeconfig file, to re-read it when it changes.
struct FileStamp {
  dev_t device = 0;
  ino_t inode = 0;
  off_t size = 0;
  std::int64_t modified_ns = 0;
  bool operator==(const FileStamp& other) const {
    return device == other.device && inode == other.inode && size == other.size &&
           modified_ns == other.modified_ns;
  }
};

class KubernetesSource : public Source {
 public:
  KubernetesSource(Settings settings, Tuning tuning)
      : settings_(std::move(settings)),
        transport_(tuning.transport ? std::move(tuning.transport) : RealTransport),
        clock_(tuning.clock != nullptr ? *tuning.clock : platform::RealClock()),
        watch_(tuning.watch),
        watch_tuning_(tuning.watch_tuning) {
    options_.page_size = settings_.page_size;
    timeout_ = settings_.timeout.value_or(kBackstopTimeout);
    policy_ = DefaultRetryPolicy();
    // Half the budget per request, so that one timed-out request still leaves time to retry.
    policy_.request_timeout =
        settings_.timeout
            ? std::max(timeout_ / 2, std::min(timeout_, std::chrono::milliseconds(1000)))
            : std::chrono::milliseconds(kDefaultRequestTimeout);
  }

  Result<SourceSnapshot> List(const ListContext& context) override {
    auto deadline = clock_.Now() + timeout_;
    auto token = Connect();
    if (!token) return Error{token.error()};
    client_->SetToken(*token);
    ApiLister lister(*client_, access_->server, options_, deadline, context.cancelled);
    {
      std::lock_guard<std::mutex> lock(connection_mutex_);
      connection_.token = *token;
    }
    auto snapshot = watch_ && !settings_.every_cronjob ? ReadCaches(lister) : ListWith(lister);
    if (!snapshot) return Error{RedactSecret(snapshot.error(), *token)};
    for (auto& problem : snapshot->problems)
      problem.message = RedactSecret(problem.message, *token);
    snapshot->history_error = RedactSecret(snapshot->history_error, *token);
    return snapshot;
  }

 private:
  // Loads the connection settings when they are new or changed and returns the bearer token
  // to send ("" for none).
  Result<std::string> Connect() {
    if (settings_.in_cluster) {
      if (!access_) {
        auto access = LoadAccess(settings_);
        if (!access) return Error{access.error()};
        Use(std::move(*access));
      }
    } else {
      struct stat info {};
      if (stat(settings_.kubeconfig.c_str(), &info) != 0) {
        access_.reset();
        return Error{fmt::format("kubeconfig: cannot read {}: {}", settings_.kubeconfig,
                                 std::strerror(errno))};
      }
      FileStamp stamp{
          info.st_dev, info.st_ino, info.st_size,
          static_cast<std::int64_t>(info.st_mtim.tv_sec) * 1000000000 + info.st_mtim.tv_nsec};
      if (!access_ || !(stamp == kubeconfig_stamp_)) {
        auto access = LoadAccess(settings_);
        if (!access) {
          access_.reset();
          return Error{access.error()};
        }
        kubeconfig_stamp_ = stamp;
        Use(std::move(*access));
      }
    }
    return BearerToken(*access_);
  }

  void Use(ClusterAccess access) {
    if (access.tls.insecure_skip_verify) {
      Log(LogLevel::kWarn, "TLS certificate verification is off (insecure-skip-tls-verify)",
          {{"source", settings_.source_name}, {"server", access.server}});
    }
    Log(LogLevel::kInfo, "kubernetes connection configured",
        {{"source", settings_.source_name}, {"server", access.server}, {"from", access.origin}});
    client_ = std::make_unique<platform::ApiClient>(transport_(access.tls), policy_,
                                                    platform::ApiHeaders(), clock_);
    {
      std::lock_guard<std::mutex> lock(connection_mutex_);
      bool changed = connection_.server != access.server || connection_.version == 0 ||
                     !SameTls(connection_.tls, access.tls);
      connection_.server = access.server;
      connection_.tls = access.tls;
      if (changed) ++connection_.version;
    }
    access_ = std::move(access);
  }

  static bool SameTls(const TlsOptions& a, const TlsOptions& b) {
    return a.ca_file == b.ca_file && a.ca_pem == b.ca_pem &&
           a.client_cert_file == b.client_cert_file && a.client_key_file == b.client_key_file &&
           a.client_cert_pem == b.client_cert_pem && a.client_key_pem == b.client_key_pem &&
           a.insecure_skip_verify == b.insecure_skip_verify;
  }

 public:
  WatchReport Report() const {
    WatchReport report;
    auto add = [&report](const auto& informers) {
      for (const auto& [scope, informer] : informers) {
        ++report.caches;
        report.synced += informer->synced();
        WatchCounts counts = informer->counts();
        report.counts.watches += counts.watches;
        report.counts.ended += counts.ended;
        report.counts.stalled += counts.stalled;
        report.counts.expired += counts.expired;
        report.counts.failed += counts.failed;
        report.counts.bytes += counts.bytes;
      }
    };
    add(cronjob_informers_);
    add(job_informers_);
    for (const auto& [scope, informer] : cronjob_informers_) report.cronjobs += informer->size();
    for (const auto& [scope, informer] : job_informers_) report.jobs += informer->size();
    report.job_relists = job_relists_;
    return report;
  }

 private:
  Connection CurrentConnection() {
    std::lock_guard<std::mutex> lock(connection_mutex_);
    return connection_;
  }

  template <typename T>
  Informer<T>& InformerFor(std::map<std::string, std::unique_ptr<Informer<T>>>& informers,
                           const std::string& scope, const char* resource,
                           const std::string& query) {
    auto& informer = informers[scope];
    if (!informer) {
      informer = std::make_unique<Informer<T>>(
          ListPath(scope, resource), query, [this] { return CurrentConnection(); }, transport_,
          clock_, watch_tuning_);
    }
    return *informer;
  }

  // The CronJobs were listed but not their Jobs: without them a failed run is invisible, so the
  // CronJobs' own status times are not taken for the whole history either.
  static void WithoutHistory(SourceSnapshot& snapshot, const std::string& jobs_error) {
    if (jobs_error.empty()) return;
    snapshot.history.clear();
    snapshot.history_error = "the CronJobs' Jobs: " + jobs_error;
  }

  // The refresh from the caches: each listed first if it is not synced (a failed list fails
  // the read as a whole); a read that confirms an absence asks the API server.
  Result<SourceSnapshot> ReadCaches(ApiLister& lister) {
    std::vector<SourceProblem> problems;
    std::vector<std::string> scopes = settings_.namespaces;
    if (scopes.empty()) scopes.push_back("");  // all namespaces
    std::vector<CronJob> cronjobs;
    for (const auto& scope : scopes) {
      auto& informer = InformerFor(cronjob_informers_, scope, "cronjobs",
                                   "labelSelector=" + UrlEncode(kRoleLabel));
      if (settings_.shard.Sharded() && !informer.synced()) {
        // Only this shard's CronJobs are held, and so only their Jobs are kept (`ours`).
        informer.KeepOnly([shard = settings_.shard](const CronJob& cronjob) {
          return shard.Owns(cronjob.object.role());
        });
      }
      auto synced = informer.Sync(lister);
      if (!synced) return Error{synced.error()};
      informer.CopyTo(cronjobs, problems);
    }
    bool confirming = confirm_pending_;
    confirm_pending_ = false;
    if (confirming) {
      auto confirmed = ConfirmFromServer(lister, scopes, cronjobs, problems);
      if (!confirmed) return Error{confirmed.error()};
    }
    std::sort(cronjobs.begin(), cronjobs.end(),
              [](const CronJob& a, const CronJob& b) { return a.object.id() < b.object.id(); });

    std::vector<Job> jobs;
    std::vector<std::string> job_scopes;
    if (!cronjobs.empty()) job_scopes = JobScopes(cronjobs);
    for (auto it = job_informers_.begin(); it != job_informers_.end();) {
      bool wanted = std::find(job_scopes.begin(), job_scopes.end(), it->first) != job_scopes.end();
      it = wanted ? std::next(it) : job_informers_.erase(it);  // stops its watch
    }
    std::unordered_map<std::string, std::size_t> owners;
    owners.reserve(cronjobs.size());
    for (std::size_t i = 0; i < cronjobs.size(); ++i) owners.emplace(cronjobs[i].uid, i);
    auto ours = [&owners](const std::string& owner) { return owners.count(owner) > 0; };
    if (settings_.shard.Sharded()) {
      std::unordered_set<std::string> uids;
      for (const auto& cronjob : cronjobs) uids.insert(cronjob.uid);
      if (job_owners_->Set(std::move(uids))) {
        ++job_relists_;
        for (auto& [scope, informer] : job_informers_) {
          informer->Relist("a CronJob whose Jobs this shard dropped is now its own");
        }
      }
    }
    std::string jobs_error;
    for (const auto& scope : job_scopes) {
      auto& informer = InformerFor(job_informers_, scope, "jobs", "");
      if (settings_.shard.Sharded() && !informer.synced()) {
        // As kube-state-metrics' shards: the others' Jobs are dropped as they come.
        informer.KeepOnly([owners = job_owners_](const Job& job) { return owners->Keep(job); });
      }
      auto synced = informer.Sync(lister);
      if (!synced) {
        jobs_error = synced.error();
        break;
      }
      std::vector<Job> cached;
      informer.CopyTo(cached, problems, ours);
      for (auto& job : cached) {
        auto owner = owners.find(job.owner_uid);
        if (owner == owners.end()) continue;
        job.owner = owner->second;
        jobs.push_back(std::move(job));
      }
    }
    SourceSnapshot snapshot = BuildSnapshot(cronjobs, jobs);
    WithoutHistory(snapshot, jobs_error);
    snapshot.problems = lister.problems();
    snapshot.problems.insert(snapshot.problems.end(), problems.begin(), problems.end());
    snapshot.problems = CapProblems(std::move(snapshot.problems));
    if (!confirming && !RolesWithoutObject(settings_.roles, snapshot.objects).empty()) {
      confirm_pending_ = true;  // the refresher reads again to confirm (sources/absence.h)
    }
    return snapshot;
  }

  // Adds to `cronjobs` what the API server holds for the desired roles they lack: lists for
  // those roles' labels, never the cache, so that an absence is confirmed by the server.
  Result<bool> ConfirmFromServer(ApiLister& lister, const std::vector<std::string>& scopes,
                                 std::vector<CronJob>& cronjobs,
                                 std::vector<SourceProblem>& problems) {
    std::vector<LiveObject> objects;
    for (const auto& cronjob : cronjobs) objects.push_back(cronjob.object);
    std::vector<std::string> absent;
    for (const auto& role : RolesWithoutObject(settings_.roles, objects)) {
      if (IsLabelValue(role)) absent.push_back(role);
    }
    std::unordered_set<std::string> cached;
    for (const auto& cronjob : cronjobs) cached.insert(cronjob.uid);
    for (std::size_t first = 0; first < absent.size(); first += kRolesPerConfirmingList) {
      std::string selector = std::string(kRoleLabel) + " in (";
      for (std::size_t i = first; i < std::min(absent.size(), first + kRolesPerConfirmingList);
           ++i) {
        selector += (i > first ? "," : "") + absent[i];
      }
      selector += ")";
      std::vector<CronJob> found;
      ProblemSink found_problems(kMaxListedItemProblems);
      auto listed = ListEvery(lister, scopes, "cronjobs", "labelSelector=" + UrlEncode(selector),
                              StartCronJobs, found, found_problems);
      if (!listed) return listed;
      found_problems.AppendTo(problems);
      for (auto& cronjob : found) {
        if (!cached.insert(cronjob.uid).second) continue;
        Log(LogLevel::kInfo,
            "a CronJob the watch has not shown yet was found by the confirming list",
            {{"source", settings_.source_name}, {"cronjob", std::string(cronjob.object.id())}});
        cronjobs.push_back(std::move(cronjob));
      }
    }
    return true;
  }

  Result<SourceSnapshot> ListWith(ApiLister& lister) {
    ProblemSink problems(kMaxListedItemProblems);
    std::vector<CronJob> cronjobs;
    std::vector<std::string> scopes = settings_.namespaces;
    if (scopes.empty()) scopes.push_back("");  // all namespaces
    const bool every = settings_.every_cronjob;
    auto listed =
        ListEvery(lister, scopes, "cronjobs", every ? "" : "labelSelector=" + UrlEncode(kRoleLabel),
                  every ? StartEveryCronJob : StartCronJobs, cronjobs, problems);
    if (!listed) return Error{listed.error()};
    if (settings_.shard.Sharded()) {
      // Another shard's CronJobs go before their Jobs are listed: only this shard's are kept.
      cronjobs.erase(std::remove_if(cronjobs.begin(), cronjobs.end(),
                                    [this](const CronJob& cronjob) {
                                      return !settings_.shard.Owns(cronjob.object.role());
                                    }),
                     cronjobs.end());
    }

    std::vector<Job> jobs;
    std::string jobs_error;
    if (!cronjobs.empty()) {
      std::unordered_map<std::string, std::size_t> owners;
      owners.reserve(cronjobs.size());
      for (std::size_t i = 0; i < cronjobs.size(); ++i) owners.emplace(cronjobs[i].uid, i);
      auto start = [&owners](std::function<void(Mapped<Job>)> on_item) {
        return StreamJobList(owners, std::move(on_item));
      };
      listed = ListEvery(lister, JobScopes(cronjobs), "jobs", "", start, jobs, problems);
      if (!listed) jobs_error = listed.error();
    }
    SourceSnapshot snapshot = BuildSnapshot(cronjobs, jobs, every);
    WithoutHistory(snapshot, jobs_error);
    snapshot.problems = lister.problems();
    problems.AppendTo(snapshot.problems);
    snapshot.problems = CapProblems(std::move(snapshot.problems));
    return snapshot;
  }

  std::vector<std::string> JobScopes(const std::vector<CronJob>& cronjobs) const {
    if (!settings_.namespaces.empty()) return settings_.namespaces;
    std::set<std::string> namespaces;
    for (const auto& cronjob : cronjobs) {
      namespaces.emplace(cronjob.object.id().substr(0, cronjob.object.id().find('/')));
      if (namespaces.size() > kMaxJobNamespaces) return {""};
    }
    return {namespaces.begin(), namespaces.end()};
  }

  Settings settings_;
  TransportFactory transport_;
  platform::Clock& clock_;
  std::chrono::milliseconds timeout_;
  ListOptions options_;
  platform::RetryPolicy policy_;
  std::optional<ClusterAccess> access_;
  FileStamp kubeconfig_stamp_;
  std::unique_ptr<platform::ApiClient> client_;
  const bool watch_;
  const WatchTuning watch_tuning_;
  bool confirm_pending_ = false;
  // A shard's: the Jobs its Job caches keep (their watch threads ask).
  std::shared_ptr<JobOwners> job_owners_ = std::make_shared<JobOwners>();
  int job_relists_ = 0;
  std::mutex connection_mutex_;
  Connection connection_;  // what the watches use; guarded by connection_mutex_
  // Last: their watch threads use the members above until they are stopped and joined.
  std::map<std::string, std::unique_ptr<Informer<CronJob>>> cronjob_informers_;
  std::map<std::string, std::unique_ptr<Informer<Job>>> job_informers_;
};

}  // namespace

Result<Settings> ReadSettings(const SourceSpec& spec, const char* kubeconfig_variable,
                              const char* home) {
  const auto* decoded = spec.SettingsAs<KubernetesSettings>();
  if (decoded == nullptr) return Error{"the settings are not a kubernetes source's"};
  Settings settings;
  settings.source_name = spec.name;
  settings.in_cluster = decoded->in_cluster;
  settings.context = decoded->context;
  if (!settings.in_cluster) {
    settings.kubeconfig = decoded->kubeconfig.empty()
                              ? DefaultKubeconfigPath(kubeconfig_variable, home)
                              : ExpandHome(decoded->kubeconfig, home);
  }
  settings.namespaces = decoded->namespaces;
  settings.page_size = decoded->page_size;
  if (decoded->timeout) settings.timeout = *decoded->timeout;
  return settings;
}

std::optional<WatchReport> ReportWatches(Source& source) {
  auto* kubernetes = dynamic_cast<KubernetesSource*>(&source);
  if (kubernetes == nullptr) return std::nullopt;
  return kubernetes->Report();
}

Result<std::unique_ptr<Source>> MakeTunedSource(const SourceOptions& options, Tuning tuning) {
  auto settings = ReadSettings(*options.spec, std::getenv("KUBECONFIG"), std::getenv("HOME"));
  if (!settings) return Error{settings.error()};
  for (const JobSpec* job : options.jobs) settings->roles.push_back(job->role);
  settings->shard = options.shard;
  return MakeSource(std::move(*settings), std::move(tuning));
}

platform::HttpTransport RealTransport(const TlsOptions& tls) {
  return platform::TransportOver(std::make_shared<HttpClient>(tls));
}

Result<std::unique_ptr<Source>> MakeSource(Settings settings, Tuning tuning) {
  return std::unique_ptr<Source>(
      std::make_unique<KubernetesSource>(std::move(settings), std::move(tuning)));
}

Result<ClusterAccess> LoadAccess(const Settings& settings) {
  if (settings.in_cluster) {
    return InClusterAccess(std::getenv("KUBERNETES_SERVICE_HOST"),
                           std::getenv("KUBERNETES_SERVICE_PORT"), ServiceAccountDir());
  }
  return LoadKubeconfig(settings.kubeconfig, settings.context);
}

Result<std::string> BearerToken(const ClusterAccess& access) {
  if (access.token_file.empty()) return access.token;
  return ReadTokenFile(access.token_file);  // rotated by the kubelet: read it every time
}

}  // namespace schedwatch::kubernetes

namespace schedwatch {

Result<std::unique_ptr<Source>> MakeKubernetesSource(const SourceOptions& options) {
  return kubernetes::MakeTunedSource(options, {});
}

}  // namespace schedwatch
