// The `kubernetes` source: batch/v1 CronJobs carrying the label schedwatch.io/role, and the Jobs
// they own, listed once and then watched (kube_watch.h); a refresh reads the caches. A role
// the cache lacks is confirmed by a list for its label from the API server.
//
//   sources:
//     prod:
//       type: kubernetes
//       kubeconfig: ~/.kube/config   # default: $KUBECONFIG's first entry, else ~/.kube/config
//       context: prod                # default: the kubeconfig's current-context
//       # in_cluster: true           # instead: the pod's service account
//       namespaces: [batch, ops]     # default: all namespaces
//       page_size: 500               # items per list request
//       timeout: 10s                 # the whole read (the refresher's limit too); default:
//                                    # --refresh.source-timeout, requests 10s each
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "schedwatch/platform/api_client.h"
#include "sources/kubernetes/kube_config.h"
#include "sources/kubernetes/kube_watch.h"
#include "sources/kubernetes/kubernetes_descriptor.h"
#include "sources/source.h"

namespace schedwatch::kubernetes {

struct Settings {
  std::string source_name;
  std::string kubeconfig;  // the file to read; empty with in_cluster
  std::string context;     // empty: current-context
  bool in_cluster = false;
  std::vector<std::string> namespaces;  // empty: all
  int page_size = 500;
  // The whole read. Unset: the refresher's --refresh.source-timeout bounds it by cancelling.
  std::optional<std::chrono::milliseconds> timeout;
  // The roles the spec wants of this source: an absence of one is confirmed by a list for its
  // label from the API server, not from the cache.
  std::vector<std::string> roles;
  // Discover: list every CronJob, labelled or not, at every read (no watches), with the run
  // history by "<namespace>/<name>".
  bool every_cronjob = false;
  // A shard caches its roles' CronJobs (and their Jobs) only.
  ShardAssignment shard;
};

// The decoded spec block (KubernetesSettings) with its kubeconfig found: `kubeconfig_variable`
// and `home` are $KUBECONFIG and $HOME. An Error only for settings of another type.
Result<Settings> ReadSettings(const SourceSpec& spec, const char* kubeconfig_variable,
                              const char* home);

// The transport for a cluster's TLS settings: libcurl through HttpClient in production, an
// in-process fake API server in unit tests (which see the TlsOptions the kubeconfig gave).
using TransportFactory = std::function<platform::HttpTransport(const TlsOptions& tls)>;
platform::HttpTransport RealTransport(const TlsOptions& tls);

// Knobs that are not spec keys: the transport and the clock of the retry backoffs (tests).
struct Tuning {
  TransportFactory transport;        // empty: RealTransport
  platform::Clock* clock = nullptr;  // null: the real one
  // false: list everything at every read, as before watches (tests of the list, benchmarks).
  bool watch = true;
  WatchTuning watch_tuning;
};

// What the watches of a source did (tests and benchmarks); null for a source that is not a
// kubernetes one or does not watch.
struct WatchReport {
  int caches = 0, synced = 0;
  WatchCounts counts;                  // summed
  std::size_t cronjobs = 0, jobs = 0;  // objects the caches hold
  int job_relists = 0;                 // a shard's Jobs listed again for a CronJob now its own
};
std::optional<WatchReport> ReportWatches(Source& source);

Result<std::unique_ptr<Source>> MakeSource(Settings settings, Tuning tuning = {});
// The source of a spec block, with `tuning`.
Result<std::unique_ptr<Source>> MakeTunedSource(const SourceOptions& options, Tuning tuning);

// How to reach the cluster of `settings`: its kubeconfig context, or the pod's service account.
Result<ClusterAccess> LoadAccess(const Settings& settings);

// The bearer token to send now ("" for none): inline, or read afresh from the file (it rotates).
Result<std::string> BearerToken(const ClusterAccess& access);

}  // namespace schedwatch::kubernetes

namespace schedwatch {

Result<std::unique_ptr<Source>> MakeKubernetesSource(const SourceOptions& options);

}  // namespace schedwatch
