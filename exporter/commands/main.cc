// schedwatch_exporter: serve, check, reconcile. Exit codes: 0 fine, 1 something needs a person,
// 2 bad spec or arguments.
#include <fmt/format.h>
#include <malloc.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <iostream>
#include <map>
#include <thread>

#include "exporter/commands/check.h"
#include "exporter/commands/discover_command.h"
#include "exporter/commands/shard_flags.h"
#include "exporter/http/web.h"
#include "exporter/http/web_config.h"
#include "exporter/pages/status_page.h"
#include "exporter/refresh/refresher.h"
#include "reconcile/reconcile.h"
#include "schedwatch/build_info.h"
#include "schedwatch/duration.h"
#include "schedwatch/platform/http_client.h"
#include "schedwatch/platform/log.h"
#include "schedwatch/spec.h"
#include "schedwatch/timefmt.h"
#include "sources/catalog.h"

namespace schedwatch {
namespace {

constexpr int kExitBadInput = 2;

// A read stuck in the kernel (a job's file on a hung NFS or FUSE mount) ignores being cancelled.
// Stopping waits this long for the reads and the refresh (one refresh of 1,000,000 roles takes
// about 5 s), then exits without them: the exporter keeps no state on disk, and reconcile's
// writes survive being cut at any point.
constexpr std::chrono::seconds kStopGrace{10};

// A wait of the exporter's own loop: at most a day (kMaxWaitSeconds); `positive` refuses 0s.
std::chrono::milliseconds ToMillis(const std::string& flag, const std::string& text,
                                   bool positive) {
  auto milliseconds = ParseDurationMilliseconds(text, kMaxWaitSeconds);
  if (!milliseconds) throw CLI::ValidationError(flag, milliseconds.error());
  if (positive && *milliseconds <= 0) throw CLI::ValidationError(flag, "must be longer than 0s");
  return std::chrono::milliseconds(*milliseconds);
}

int Serve(const std::string& config_file, const std::string& web_config_file,
          WebOptions web_options, RefresherOptions options,
          const std::shared_ptr<BackgroundReconciler>& background) {
  auto spec = LoadSpecFile(config_file, options.max_spec_bytes, options.shard);
  if (!spec) {
    std::fprintf(stderr, "%s\n", spec.error().c_str());
    return kExitBadInput;
  }
  if (!web_config_file.empty()) {
    auto web_config = LoadWebConfigFile(web_config_file);
    if (!web_config) {
      std::fprintf(stderr, "%s\n", web_config.error().c_str());
      return kExitBadInput;
    }
    web_options.web_config = std::move(*web_config);
  }
  // Idle connections cost a descriptor each: let the connection limit be reachable.
  std::size_t open_files = RaiseOpenFileLimit();
  if (web_options.max_connections + 64 > open_files) {
    unsigned reachable = open_files > 128 ? static_cast<unsigned>(open_files - 64) : 64;
    Log(LogLevel::kWarn, "connection limit lowered to what the open-file limit allows",
        {{"max_connections", std::to_string(reachable)},
         {"open_files", std::to_string(open_files)}});
    web_options.max_connections = reachable;
  }
  // Signals are taken by sigwait below, never by another thread.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGHUP);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  options.config_file = config_file;
  auto refresher = Refresher::Create(options, std::make_shared<const Spec>(std::move(*spec)));
  if (!refresher) {
    std::fprintf(stderr, "%s: %s\n", config_file.c_str(), refresher.error().c_str());
    return kExitBadInput;
  }
  // A reconcile lock that cannot be taken shows as a metric; the listener goes before the
  // refresher does.
  struct LockListener {
    const std::shared_ptr<BackgroundReconciler>& background;
    ~LockListener() {
      if (background) background->OnLockOutcome(nullptr);
    }
  } lock_listener{background};
  if (background) {
    Refresher* shown = refresher->get();
    background->OnLockOutcome(
        [shown](bool unavailable) { shown->SetReconcileLockUnavailable(unavailable); });
  }
  bool web_config_error = false;
  auto server = WebServer::Start(web_options, **refresher, &web_config_error);
  if (!server && web_config_error) {
    std::fprintf(stderr, "%s: %s\n", web_config_file.c_str(), server.error().c_str());
    return kExitBadInput;
  }
  if (!server) {
    Log(LogLevel::kError, "cannot start the web server", {{"err", server.error()}});
    // Started without its socket: an error of how it was started, as a bad flag is.
    return web_options.systemd_socket && server.error().rfind("--web.systemd-socket", 0) == 0
               ? kExitBadInput
               : 1;
  }
  for (const auto& listener : (*server)->listeners()) {
    Log(LogLevel::kInfo, "listening",
        {{"address", listener.address},
         {"port", std::to_string(listener.port)},
         {"tls", web_options.web_config && web_options.web_config->tls ? "true" : "false"},
         {"config", config_file},
         {"version", SCHEDWATCH_VERSION}});
  }
  if (options.on_spec_loaded) options.on_spec_loaded((*refresher)->Current()->result.spec);
  (*refresher)->Start();
  for (;;) {
    int signal_number = 0;
    sigwait(&signals, &signal_number);
    if (signal_number == SIGHUP) {
      (void)(*refresher)->Reload();
      continue;
    }
    Log(LogLevel::kInfo, "shutting down", {{"signal", strsignal(signal_number)}});
    break;
  }
  server->reset();
  auto stopping = std::async(std::launch::async, [&refresher] { (*refresher)->Stop(); });
  if (stopping.wait_for(kStopGrace) != std::future_status::ready) {
    Log(LogLevel::kWarn, "exiting without waiting for the refresh to stop",
        {{"waited", fmt::format("{}s", kStopGrace.count())},
         {"hint", "a source read stuck in the kernel (a job's file on a hung mount?)"}});
    std::_Exit(0);  // returning would wait for the stuck read, in `stopping` and in the readers
  }
  return 0;
}

int Check(const std::string& config_file, std::size_t max_spec_bytes, const std::string& from_text,
          int count, const std::string& output, std::uint32_t total_shards) {
  auto spec = LoadSpecFile(config_file, max_spec_bytes);
  if (!spec) {
    std::fprintf(stderr, "%s\n", spec.error().c_str());
    return kExitBadInput;
  }
  std::int64_t from = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  if (!from_text.empty()) {
    auto parsed = ParseRfc3339(from_text);
    if (!parsed) {
      std::fprintf(stderr, "--from: \"%s\" is not an RFC 3339 time\n", from_text.c_str());
      return kExitBadInput;
    }
    from = *parsed;
  }
  if (output == "json") {
    RenderCheckJson(*spec, from, count, total_shards, std::cout);
  } else {
    RenderCheckText(*spec, from, count, total_shards, std::cout);
  }
  return 0;
}

int RunReconcile(const std::string& config_file, std::size_t max_spec_bytes,
                 const ReconcileOptions& options) {
  auto spec = LoadSpecFile(config_file, max_spec_bytes);
  if (!spec) {
    std::fprintf(stderr, "%s\n", spec.error().c_str());
    return kExitBadInput;
  }
  ReconcileReport report = Reconcile(*spec, options);
  std::cout << report.Render();
  if (!options.apply && report.ExitCode() != 0) {
    std::cout << "dry run: nothing was changed; --apply creates what is marked \"would create\"\n";
  }
  return report.ExitCode();
}

// `explain --role R`: one role's conditions with their evidence, from a running exporter's
// JSON API or from the spec and one read of its sources.
int Explain(const std::string& role, const std::string& web_url, const std::string& config_file,
            RefresherOptions options, const std::string& output) {
  nlohmann::json json;
  if (!web_url.empty()) {
    std::string base = web_url;
    while (!base.empty() && base.back() == '/') base.pop_back();
    HttpClient client;
    HttpRequest request;
    request.url = base + "/api/v1/roles/" + UrlEncode(role);
    request.headers.push_back({"Accept", "application/json"});
    auto response = client.Send(request);
    if (!response) {
      std::fprintf(stderr, "explain: %s\n", response.error().c_str());
      return 1;
    }
    if (response->status == 404) {
      std::fprintf(stderr, "explain: role \"%s\" is not in the exporter's spec\n", role.c_str());
      return kExitBadInput;
    }
    json = nlohmann::json::parse(response->body, nullptr, false);
    if (response->status != 200 || json.is_discarded() || !json.is_object()) {
      std::fprintf(stderr, "explain: GET %s answered %ld, not a role's JSON\n",
                   UrlPathForMessages(request.url).c_str(), response->status);
      return 1;
    }
  } else {
    auto spec = LoadSpecFile(config_file, options.max_spec_bytes);
    if (!spec) {
      std::fprintf(stderr, "%s\n", spec.error().c_str());
      return kExitBadInput;
    }
    if (spec->FindJob(role) == nullptr) {
      std::fprintf(stderr, "explain: role \"%s\" is not in %s\n", role.c_str(),
                   config_file.c_str());
      return kExitBadInput;
    }
    options.config_file = config_file;
    auto refresher = Refresher::Create(options, std::make_shared<const Spec>(std::move(*spec)));
    if (!refresher) {
      std::fprintf(stderr, "%s: %s\n", config_file.c_str(), refresher.error().c_str());
      return kExitBadInput;
    }
    (*refresher)->RefreshOnce();
    json = nlohmann::json::parse(*RenderRoleJson((*refresher)->Current()->result, role));
  }
  std::cout << (output == "json" ? json.dump(2) + "\n" : RenderExplainText(json));
  auto conditions = json.value("conditions", nlohmann::json::array());
  bool ok = conditions.size() == 1 && conditions[0] == "ok";
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace schedwatch

int main(int argc, char** argv) {
  using namespace schedwatch;
  // The exposition buffers are tens of MiB and replaced every refresh: keep them out of the
  // heap (a fixed threshold stops glibc from raising it after the first free) so that freeing
  // one returns its pages at once, and keep per-thread arenas few.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  mallopt(M_ARENA_MAX, 1);
  CLI::App app{
      "schedwatch_exporter: watches scheduled jobs from the outside and serves what it "
      "sees as Prometheus metrics."};
  app.set_version_flag("--version", VersionText("schedwatch_exporter"));
  std::string config_file, web_config_file;
  WebOptions web_options;
  std::string read_header_timeout = "10s";
  std::string refresh_interval = "30s", confirm_delay = "2s", source_timeout = "10s";
  std::string log_level = "info", log_format = "logfmt", ledger_file;
  // Required by every mode but `explain --web.url` (checked after parsing).
  app.add_option("--config.file", config_file, "The desired-state spec (YAML)");
  std::size_t max_spec_bytes = kDefaultMaxSpecBytes;
  app.add_option("--config.max-size", max_spec_bytes,
                 "Largest spec file read (B, KiB, MiB, GiB); 1,000,000 roles are about 100 MB")
      ->transform(CLI::AsSizeValue(false))
      ->default_str("256MiB");
  app.add_option("--web.listen-address", web_options.listen_addresses,
                 "Address to listen on; repeat for more (\":9762\" is every IPv4 and IPv6 "
                 "address)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->capture_default_str();
  app.add_flag("--web.systemd-socket", web_options.systemd_socket,
               "Serve on the sockets systemd passes (socket activation) instead of "
               "--web.listen-address");
  app.add_option("--web.telemetry-path", web_options.telemetry_path,
                 "Path under which to expose metrics")
      ->capture_default_str();
  app.add_flag("--web.enable-lifecycle", web_options.enable_lifecycle,
               "Allow reloading the spec by HTTP (POST /-/reload)");
  app.add_option("--web.config.file", web_config_file,
                 "Web configuration (TLS, basic auth, headers) in the Prometheus "
                 "exporter-toolkit format");
  app.add_option("--web.runbook-url", web_options.runbook_url,
                 "Base of the status page's runbook links (as schedwatch_rulegen "
                 "--runbook-base-url): <url>#<alertname in lower case>")
      ->capture_default_str();
  app.add_option("--web.max-connections", web_options.max_connections,
                 "Most connections served at once")
      ->check(CLI::Range(1u, 1000000u))
      ->capture_default_str();
  app.add_option("--web.max-connections-per-ip", web_options.max_connections_per_ip,
                 "Most connections one client address may hold (at most half of "
                 "--web.max-connections)")
      ->check(CLI::Range(1u, 1000000u))
      ->capture_default_str();
  app.add_option("--web.read-header-timeout", read_header_timeout,
                 "Longest a client may take to send a whole request; a connection that has "
                 "not is closed")
      ->capture_default_str();
  app.add_option("--refresh.interval", refresh_interval, "Time between refreshes")
      ->capture_default_str();
  app.add_option("--refresh.confirm-delay", confirm_delay,
                 "Wait before the re-read that confirms a role is missing")
      ->capture_default_str();
  app.add_option("--refresh.source-timeout", source_timeout,
                 "Longest a source's read may take, unless its spec block sets timeout")
      ->capture_default_str();
  app.add_option("--ledger.file,--ledger", ledger_file, "Ledger of verified object IDs (JSON)");
  ShardFlags shard_flags;
  app.add_option("--shard", shard_flags.shard,
                 "Which shard of the spec to watch, 0 to --total-shards - 1, or auto: the "
                 "ordinal ending --pod-name (a StatefulSet's \"name-3\" is 3)");
  app.add_option("--total-shards", shard_flags.total,
                 "How many exporters share the spec, each watching the roles that hash to its "
                 "shard (default 1: all); with check, list each role's shard");
  app.add_option("--pod-name", shard_flags.pod_name,
                 "For --shard=auto: this pod's name (default $POD_NAME)");
  app.add_option("--log.level", log_level, "debug, info, warn or error")
      ->check(CLI::IsMember({"debug", "info", "warn", "error"}))
      ->capture_default_str();
  app.add_option("--log.format", log_format, "logfmt or json")
      ->check(CLI::IsMember({"logfmt", "json"}))
      ->capture_default_str();

  auto* check = app.add_subcommand("check", "Validate the spec and print each role's fire times");
  std::string from, output = "text";
  int count = 3;
  check->add_option("--from", from, "Start of the fire-time listing (RFC 3339); default now");
  check->add_option("--count", count, "Fire times per role")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  check->add_option("--output", output, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  check->fallthrough();  // --config.file and the other global flags may follow "check"

  auto* reconcile = app.add_subcommand(
      "reconcile", "Re-create missing jobs from their templates (dry run unless --apply)");
  ReconcileOptions reconcile_options;
  reconcile->add_flag("--apply", reconcile_options.apply, "Create what is missing");
  reconcile
      ->add_option("--lock-file", reconcile_options.lock_file,
                   "Lock that keeps two reconcilers apart")
      ->capture_default_str();
  reconcile->fallthrough();
  bool reconcile_on_start = false;
  app.add_flag("--reconcile.on-start", reconcile_on_start,
               "Serve mode: run reconcile --apply at start-up and after each spec reload");
  app.add_option("--reconcile.lock-file", reconcile_options.lock_file,
                 "Serve mode: the lock --reconcile.on-start shares with `reconcile` runs")
      ->capture_default_str();
  auto* explain = app.add_subcommand(
      "explain", "Explain one role: its conditions, their evidence and safe first actions");
  std::string explain_role, explain_url, explain_output = "text";
  explain->add_option("--role", explain_role, "The role")->required();
  explain->add_option("--web.url", explain_url,
                      "A running exporter (http://host:9762); without it: --config.file and one "
                      "read of the sources");
  explain->add_option("--output", explain_output, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  explain->fallthrough();
  auto* discover = app.add_subcommand(
      "discover",
      "Draft a spec from what the schedulers hold now, or add to --config.file what it lacks");
  DiscoverFlags discover_flags;
  discover->add_option("--type", discover_flags.type,
                       "Read one source of this type, set up by the flags below (a draft)");
  discover
      ->add_option("--source", discover_flags.sources,
                   "With --config.file: the sources to read (repeat; default all). With --type: "
                   "its name (default the type)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  discover->add_flag("--write-markers", discover_flags.write_markers,
                     "Add the marker comments to crontab files (a backup beside each)");
  discover->add_option("--output", discover_flags.output,
                       "Write the spec to this file (atomically) instead of standard output");
  // Every setting of every source type, as --<key> (also with '-' for '_'); repeat for a list.
  std::map<std::string, std::vector<std::string>> setting_values;
  for (const auto& [type, descriptor] : BuiltInCatalog().descriptors()) {
    for (const auto& key : descriptor->settings_keys()) {
      if (setting_values.count(key.name)) continue;
      std::string names = "--" + key.name;
      std::string hyphens = key.name;
      std::replace(hyphens.begin(), hyphens.end(), '_', '-');
      if (hyphens != key.name) names += ",--" + hyphens;
      discover
          ->add_option(names, setting_values[key.name],
                       fmt::format("With --type: the source's `{}` setting", key.name))
          ->expected(1)
          ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
          ->group("Source settings (with --type)");
    }
  }
  discover->fallthrough();
  app.require_subcommand(0, 1);

  RefresherOptions options;
  try {
    app.parse(argc, argv);
    options.interval = ToMillis("--refresh.interval", refresh_interval, true);
    options.confirm_delay = ToMillis("--refresh.confirm-delay", confirm_delay, false);
    options.source_timeout = ToMillis("--refresh.source-timeout", source_timeout, true);
    web_options.read_header_timeout =
        ToMillis("--web.read-header-timeout", read_header_timeout, true);
    if (config_file.empty() && !(explain->parsed() && !explain_url.empty()) &&
        !discover->parsed()) {
      throw CLI::RequiredError("--config.file");
    }
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  LogLevel level = LogLevel::kInfo;
  ParseLogLevel(log_level, level);
  ConfigureLog(level, log_format == "json");
  options.ledger_file = ledger_file;

  options.max_spec_bytes = max_spec_bytes;
  if (check->parsed()) {
    if (!shard_flags.shard.empty() || (shard_flags.total && *shard_flags.total < 1)) {
      ShardFlags total_only{"", shard_flags.total, ""};
      auto shard = ResolveShard(total_only);
      std::fprintf(stderr, "check: %s\n",
                   shard ? "--shard is not for check: --total-shards N lists every role's shard"
                         : shard.error().c_str());
      return kExitBadInput;
    }
    return Check(config_file, max_spec_bytes, from, count, output,
                 shard_flags.total ? static_cast<std::uint32_t>(*shard_flags.total) : 0);
  }
  if (shard_flags.pod_name.empty()) {
    if (const char* pod = std::getenv("POD_NAME")) shard_flags.pod_name = pod;
  }
  if (!shard_flags.shard.empty() || shard_flags.total) {
    if (explain->parsed() || discover->parsed() || reconcile->parsed()) {
      std::fprintf(stderr, "--shard and --total-shards are for serving (and check)\n");
      return kExitBadInput;
    }
    auto shard = ResolveShard(shard_flags);
    if (!shard) {
      std::fprintf(stderr, "%s\n", shard.error().c_str());
      return kExitBadInput;
    }
    options.shard = *shard;
    if (shard->spare_of != 0) {
      Log(LogLevel::kWarn, "pod ordinal not below --total-shards: a spare until it is removed",
          {{"shard", std::to_string(shard->ordinal)},
           {"total_shards", std::to_string(shard->total)},
           {"watches", fmt::format("shard {} of {}", shard->ordinal, shard->spare_of)}});
    }
  }
  if (discover->parsed()) {
    for (auto& [key, values] : setting_values) {
      if (!values.empty()) discover_flags.settings[key] = values;
    }
    discover_flags.max_spec_bytes = max_spec_bytes;
    return RunDiscoverCommand(config_file, discover_flags);
  }
  if (explain->parsed()) {
    return Explain(explain_role, explain_url, config_file, options, explain_output);
  }
  reconcile_options.ledger_file = ledger_file;
  reconcile_options.confirm_delay = options.confirm_delay;
  if (reconcile->parsed()) return RunReconcile(config_file, max_spec_bytes, reconcile_options);
  std::shared_ptr<BackgroundReconciler> background;
  if (reconcile_on_start) {
    reconcile_options.apply = true;
    background = std::make_shared<BackgroundReconciler>(reconcile_options);
    options.on_spec_loaded = [background](std::shared_ptr<const Spec> spec) {
      background->Submit(std::move(spec));
    };
  }
  return Serve(config_file, web_config_file, web_options, options, background);
}
