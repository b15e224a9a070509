// schedwatch_exporter: serve, check, reconcile. Exit codes: 0 fine, 1 something needs a person,
// 2 bad spec or arguments.
#include <fmt/format.h>
#include <malloc.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <thread>

#include "exporter/check.h"
#include "exporter/log.h"
#include "exporter/reconcile/reconcile.h"
#include "exporter/refresher.h"
#include "exporter/web.h"
#include "schedwatch/duration.h"
#include "schedwatch/spec.h"
#include "schedwatch/timefmt.h"

namespace schedwatch {
namespace {

constexpr int kExitBadInput = 2;
constexpr const char* kDefaultListenAddress = ":9762";

// A wait of the exporter's own loop: at most a day (kMaxWaitSeconds); `positive` refuses 0s.
std::chrono::milliseconds ToMillis(const std::string& flag, const std::string& text,
                                   bool positive) {
  auto milliseconds = ParseDurationMilliseconds(text, kMaxWaitSeconds);
  if (!milliseconds) throw CLI::ValidationError(flag, milliseconds.error());
  if (positive && *milliseconds <= 0) throw CLI::ValidationError(flag, "must be longer than 0s");
  return std::chrono::milliseconds(*milliseconds);
}

int Serve(const std::string& config_file, const std::string& listen_address,
          const std::string& telemetry_path, RefresherOptions options) {
  auto spec = LoadSpecFile(config_file);
  if (!spec) {
    std::fprintf(stderr, "%s\n", spec.error().c_str());
    return kExitBadInput;
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
  auto server = WebServer::Start(listen_address, telemetry_path, **refresher);
  if (!server) {
    Log(LogLevel::kError, "cannot start the web server", {{"err", server.error()}});
    return 1;
  }
  Log(LogLevel::kInfo, "listening",
      {{"address", listen_address},
       {"port", std::to_string((*server)->port())},
       {"config", config_file},
       {"version", SCHEDWATCH_VERSION}});
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
  (*refresher)->Stop();
  return 0;
}

int Check(const std::string& config_file, const std::string& from_text, int count,
          const std::string& output) {
  auto spec = LoadSpecFile(config_file);
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
  std::cout << (output == "json" ? RenderCheckJson(*spec, from, count)
                                 : RenderCheckText(*spec, from, count));
  return 0;
}

int RunReconcile(const std::string& config_file, const ReconcileOptions& options) {
  auto spec = LoadSpecFile(config_file);
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

}  // namespace
}  // namespace schedwatch

int main(int argc, char** argv) {
  using namespace schedwatch;
  // The exposition buffers are tens of MiB and replaced every refresh: keep them out of the
  // heap (a fixed threshold stops glibc from raising it after the first free) so that freeing
  // one returns its pages at once, and keep per-thread arenas few.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  mallopt(M_ARENA_MAX, 2);
  CLI::App app{
      "schedwatch_exporter: watches scheduled jobs from the outside and serves what it "
      "sees as Prometheus metrics."};
  app.set_version_flag("--version", fmt::format("schedwatch_exporter, version {} (revision: {})",
                                                SCHEDWATCH_VERSION, SCHEDWATCH_REVISION));
  std::string config_file, listen_address = kDefaultListenAddress, telemetry_path = "/metrics";
  std::string refresh_interval = "30s", confirm_delay = "2s", source_timeout = "10s";
  std::string log_level = "info", log_format = "logfmt", ledger_file;
  app.add_option("--config.file", config_file, "The desired-state spec (YAML)")->required();
  app.add_option("--web.listen-address", listen_address, "Address to listen on")
      ->capture_default_str();
  app.add_option("--web.telemetry-path", telemetry_path, "Path under which to expose metrics")
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
  app.require_subcommand(0, 1);

  RefresherOptions options;
  try {
    app.parse(argc, argv);
    options.interval = ToMillis("--refresh.interval", refresh_interval, true);
    options.confirm_delay = ToMillis("--refresh.confirm-delay", confirm_delay, false);
    options.source_timeout = ToMillis("--refresh.source-timeout", source_timeout, true);
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

  if (check->parsed()) return Check(config_file, from, count, output);
  reconcile_options.ledger_file = ledger_file;
  reconcile_options.confirm_delay = options.confirm_delay;
  if (reconcile->parsed()) return RunReconcile(config_file, reconcile_options);
  std::shared_ptr<BackgroundReconciler> background;
  if (reconcile_on_start) {
    reconcile_options.apply = true;
    background = std::make_shared<BackgroundReconciler>(reconcile_options);
    options.on_spec_loaded = [background](std::shared_ptr<const Spec> spec) {
      background->Submit(std::move(spec));
    };
  }
  return Serve(config_file, listen_address, telemetry_path, options);
}
