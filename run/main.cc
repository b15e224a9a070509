// schedwatch_run --role ROLE [options] -- COMMAND [ARGS...]
//
// The job-side companion of the exporter: takes the role's guard (a flock on a host, a Lease in
// a cluster), runs COMMAND unchanged (execvp, no shell; stdout and stderr inherited), passes
// SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 on, exits with its status, and records
// the run for the exporter. See docs/schedwatch_run.md.
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "run/guard.h"
#include "run/record_writer.h"
#include "schedwatch/build_info.h"
#include "schedwatch/duration.h"
#include "schedwatch/platform/file.h"
#include "sources/kubernetes/kube_config.h"

extern char** environ;

namespace {

using namespace schedwatch;
using namespace schedwatch::run;

// Exit codes of the wrapper itself (documented in docs/schedwatch_run.md): above the range
// shells use for signals (128 + 1..64), outside sysexits.h (64-78), below 255.
constexpr int kExitSkippedDuplicate = 200;
constexpr int kExitNotRun = 201;  // the guard failed and --on-guard-error=skip
// The command succeeded but its run could not be recorded (a full or foreign record directory):
// the run would be invisible to the exporter, so it is not reported as a success either.
constexpr int kExitNotRecorded = 202;
constexpr int kExitUsage = 2;

constexpr int kForwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
volatile sig_atomic_t child_pid = 0;

void Forward(int signal_number) {
  if (child_pid > 0) kill(child_pid, signal_number);
}

void Log(const std::string& role, const std::string& message) {
  fmt::print(stderr, "schedwatch_run: role={} {}\n", role, message);
}

bool ValidRole(const std::string& role) {
  if (role.empty() || role.size() > 63 || !std::isalnum(static_cast<unsigned char>(role[0]))) {
    return false;
  }
  for (char c : role) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return false;
  }
  return true;
}

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

double Milliseconds(std::chrono::steady_clock::duration duration) {
  return std::chrono::duration<double, std::milli>(duration).count();
}

struct Options {
  std::string role;
  std::string guard = "flock";
  std::string lock_dir = "/run/schedwatch";
  std::string record_dir = "/var/lib/schedwatch/runs";
  std::size_t keep = 100;
  std::string on_guard_error = "run";
  int skip_exit_code = kExitSkippedDuplicate;
  std::string lease_duration = "60s";
  std::string namespace_name;
  std::string kubeconfig;
  std::string context;
  bool in_cluster = false;
  std::string checkpoint_file;
};

Result<std::unique_ptr<Guard>> MakeGuard(const Options& options, const std::string& identity) {
  if (options.guard == "flock") {
    return std::unique_ptr<Guard>(
        std::make_unique<FlockGuard>(options.lock_dir, options.role, identity));
  }
  LeaseOptions lease;
  lease.role = options.role;
  lease.identity = identity;
  auto duration = ParseDuration(options.lease_duration);
  if (!duration || *duration < 3) return Error{"--lease-duration: at least 3s"};
  lease.duration_seconds = static_cast<int>(*duration);
  lease.request_timeout = std::chrono::seconds(std::min<std::int64_t>(*duration / 3, 10));
  Result<kubernetes::ClusterAccess> access = Error{""};
  if (options.in_cluster) {
    access = kubernetes::InClusterAccess(std::getenv("KUBERNETES_SERVICE_HOST"),
                                         std::getenv("KUBERNETES_SERVICE_PORT"),
                                         kubernetes::ServiceAccountDir());
  } else {
    std::string path =
        options.kubeconfig.empty()
            ? kubernetes::DefaultKubeconfigPath(std::getenv("KUBECONFIG"), std::getenv("HOME"))
            : kubernetes::ExpandHome(options.kubeconfig, std::getenv("HOME"));
    access = kubernetes::LoadKubeconfig(path, options.context);
  }
  if (!access) return Error{access.error()};
  lease.access = std::move(*access);
  lease.namespace_name = options.namespace_name;
  if (lease.namespace_name.empty() && options.in_cluster) {
    // The pod's own namespace, mounted beside its token: a regular file, a line.
    if (auto text =
            platform::ReadRegularFile(kubernetes::ServiceAccountDir() + "/namespace", 256)) {
      lease.namespace_name = text->substr(0, text->find_first_of("\r\n"));
    }
  }
  if (lease.namespace_name.empty()) lease.namespace_name = "default";
  return std::unique_ptr<Guard>(std::make_unique<LeaseGuard>(std::move(lease)));
}

// Forks and execs the command. Returns the child's pid; `exec_error` gets errno when exec
// failed (the child then exits 127 or 126, as shells do).
pid_t Spawn(const std::vector<std::string>& command, const std::vector<std::string>& environment,
            int* exec_error) {
  std::vector<char*> argv, envp;
  for (const auto& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  for (const auto& entry : environment) envp.push_back(const_cast<char*>(entry.c_str()));
  envp.push_back(nullptr);
  int pipe_fds[2];
  // Close-on-exec: a successful exec closes it (EOF); a failed one writes errno into it.
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    *exec_error = errno;
    return -1;
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    *exec_error = errno;
    close(pipe_fds[0]), close(pipe_fds[1]);
    return -1;
  }
  if (pid == 0) {
    // Only async-signal-safe calls until exec. If the wrapper is killed (even with -9), the
    // command goes with it: a command without its guard must not run on beside the next copy.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(137);
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    for (int signal_number : kForwarded) sigaction(signal_number, &default_action, nullptr);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    close(pipe_fds[0]);
    execvpe(argv[0], argv.data(), envp.data());
    int error = errno;
    (void)!write(pipe_fds[1], &error, sizeof error);
    _exit(error == ENOENT ? 127 : 126);
  }
  close(pipe_fds[1]);
  child_pid = pid;
  // Signals that came while the guard was taken are delivered now, to the command.
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  int error = 0;
  ssize_t n;
  do {
    n = read(pipe_fds[0], &error, sizeof error);
  } while (n < 0 && errno == EINTR);
  close(pipe_fds[0]);
  *exec_error = n == static_cast<ssize_t>(sizeof error) ? error : 0;
  return pid;
}

}  // namespace

int main(int argc, char** argv) {
  const double start = NowSeconds();
  const auto steady_start = std::chrono::steady_clock::now();
  // Held back until the command exists, then delivered to it (see Spawn).
  sigset_t forwarded;
  sigemptyset(&forwarded);
  for (int signal_number : kForwarded) sigaddset(&forwarded, signal_number);
  sigprocmask(SIG_BLOCK, &forwarded, nullptr);
  struct sigaction forward {};
  forward.sa_handler = Forward;
  sigemptyset(&forward.sa_mask);
  forward.sa_flags = SA_RESTART;
  for (int signal_number : kForwarded) sigaction(signal_number, &forward, nullptr);

  // Everything after the first "--" is the command, untouched.
  int split = 1;
  while (split < argc && std::strcmp(argv[split], "--") != 0) ++split;
  std::vector<std::string> command(argv + std::min(split + 1, argc), argv + argc);

  Options options;
  CLI::App app{
      "schedwatch_run: runs COMMAND under the role's guard (no second copy at once) and "
      "records the run for schedwatch_exporter.\n"
      "Usage: schedwatch_run --role ROLE [options] -- COMMAND [ARGS...]"};
  app.set_version_flag("--version", VersionText("schedwatch_run"));
  app.add_option("--role", options.role, "The role, as in the spec")->required();
  app.add_option("--guard", options.guard, "flock (one host), lease (Kubernetes) or none")
      ->check(CLI::IsMember({"flock", "lease", "none"}))
      ->capture_default_str();
  app.add_option("--lock-dir", options.lock_dir, "Directory of the flock files <role>.lock")
      ->capture_default_str();
  app.add_option("--record-dir", options.record_dir,
                 "Records go to <record-dir>/<role>/ (the spec's runs_dir)")
      ->capture_default_str();
  app.add_option("--keep", options.keep, "Records kept per role (the oldest are removed)")
      ->check(CLI::Range(1u, 10000u))
      ->capture_default_str();
  app.add_option("--on-guard-error", options.on_guard_error,
                 "When the guard or the start record cannot be written: run the command anyway "
                 "or skip it")
      ->check(CLI::IsMember({"run", "skip"}))
      ->capture_default_str();
  app.add_option("--skip-exit-code", options.skip_exit_code,
                 "Exit code of a copy that found the guard held (0 for Kubernetes Jobs, so a "
                 "skipped copy is no failed Job)")
      ->check(CLI::Range(0, 255))
      ->capture_default_str();
  app.add_option("--lease-duration", options.lease_duration,
                 "Lease: leaseDurationSeconds; renewed every third of it")
      ->capture_default_str();
  app.add_option("--namespace", options.namespace_name,
                 "Lease: namespace (default: the pod's, else default)");
  app.add_option("--kubeconfig", options.kubeconfig,
                 "Lease: kubeconfig (default: $KUBECONFIG's first entry, else ~/.kube/config)");
  app.add_option("--context", options.context, "Lease: kubeconfig context");
  app.add_flag("--in-cluster", options.in_cluster, "Lease: the pod's service account");
  app.add_option("--checkpoint-file", options.checkpoint_file,
                 "Passed as SCHEDWATCH_CHECKPOINT_FILE (default <record-dir>/<role>/checkpoint)");
  try {
    app.parse(split, argv);
    if (!ValidRole(options.role)) {
      throw CLI::ValidationError("--role",
                                 "must start with a letter or digit and contain only letters, "
                                 "digits, '-' and '_' (at most 63 characters)");
    }
    if (split >= argc || command.empty()) {
      throw CLI::ValidationError("COMMAND", "missing: schedwatch_run --role ROLE -- COMMAND ...");
    }
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : kExitUsage;
  }

  const std::string& role = options.role;
  const std::string directory = options.record_dir + "/" + role;
  const std::string host = HostName();
  RunRecord record;
  record.role = role;
  record.host = host;
  record.pid = getpid();
  record.start = start;
  record.guard = options.guard;
  const std::string identity = fmt::format("{}_{}", host, getpid());

  // Opened once: the run's records all go to the directory checked now.
  auto records = RecordDirectory::Open(options.record_dir, role);
  if (!records) Log(role, "cannot record the run: " + records.error());
  auto write = [&](const RunRecord& what) {
    if (!records) return false;
    auto written = records->Write(what);
    if (!written) Log(role, "cannot record the run: " + written.error());
    return written.ok();
  };
  auto prune = [&] {
    if (records) records->Prune(options.keep);
  };

  std::unique_ptr<Guard> guard;
  std::string guard_error;
  if (options.guard != "none") {
    auto made = MakeGuard(options, identity);
    if (made) {
      guard = std::move(*made);
      auto outcome = guard->Acquire();
      if (!outcome) {
        guard_error = outcome.error();
        guard.reset();
      } else if (!outcome->acquired) {
        record.state = RunRecord::State::kSkipped;
        record.held_by = outcome->held_by;
        record.end = NowSeconds();
        Log(role, fmt::format("skipped: another copy holds the {} guard{}", options.guard,
                              outcome->held_by.empty() ? "" : " (" + outcome->held_by + ")"));
        write(record);
        prune();
        return options.skip_exit_code;
      }
    } else {
      guard_error = made.error();
    }
  }
  if (!guard_error.empty()) {
    Log(role, fmt::format("guard error ({}): {}",
                          options.on_guard_error == "run" ? "running without the guard"
                                                          : "not running the command",
                          guard_error));
    record.guard_error = guard_error;
    if (options.on_guard_error == "skip") {
      record.state = RunRecord::State::kNotRun;
      record.end = NowSeconds();
      write(record);
      prune();
      return kExitNotRun;
    }
  }

  // The start record: a run killed with -9 stays visible as started and never finished.
  record.state = RunRecord::State::kRunning;
  if (!write(record) && options.on_guard_error == "skip") {
    Log(role, "not running the command: its start cannot be recorded");
    if (guard) guard->Release();
    return kExitNotRun;
  }

  std::vector<std::string> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string_view text = *entry;
    if (text.rfind("SCHEDWATCH_CHECKPOINT_FILE=", 0) == 0 || text.rfind("SCHEDWATCH_ROLE=", 0) == 0)
      continue;
    environment.emplace_back(text);
  }
  environment.push_back("SCHEDWATCH_CHECKPOINT_FILE=" + (options.checkpoint_file.empty()
                                                             ? directory + "/checkpoint"
                                                             : options.checkpoint_file));
  environment.push_back("SCHEDWATCH_ROLE=" + role);

  int exec_error = 0;
  pid_t pid = Spawn(command, environment, &exec_error);
  const auto exec_done = std::chrono::steady_clock::now();
  int status = 0;
  if (pid < 0) {
    Log(role, fmt::format("cannot start {}: {}", command[0], std::strerror(exec_error)));
    status = (exec_error == ENOENT ? 127 : 126) << 8;
  } else {
    if (exec_error != 0) {
      Log(role, fmt::format("cannot run {}: {}", command[0], std::strerror(exec_error)));
    }
    if (guard) guard->StartKeeping();
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  const auto exited = std::chrono::steady_clock::now();
  child_pid = 0;

  record.state = RunRecord::State::kFinished;
  record.end = NowSeconds();
  int exit_code;
  if (WIFSIGNALED(status)) {
    record.signal = WTERMSIG(status);
    exit_code = 128 + WTERMSIG(status);
  } else {
    record.exit_code = WEXITSTATUS(status);
    exit_code = WEXITSTATUS(status);
  }
  if (guard) {
    std::string kept = guard->Release();
    if (!kept.empty()) {
      Log(role, "guard not kept to the end: " + kept);
      record.guard_error = record.guard_error.empty() ? kept : record.guard_error + "; " + kept;
    }
  }
  bool recorded = write(record);
  prune();
  if (!recorded && exit_code == 0) {
    Log(role, fmt::format("the command succeeded, but its run is not recorded: exiting {}",
                          kExitNotRecorded));
    exit_code = kExitNotRecorded;
  }
  if (const char* timings = std::getenv("SCHEDWATCH_RUN_TIMINGS"); timings && *timings == '1') {
    fmt::print(stderr, "schedwatch_run: timings start_to_exec_ms={:.3f} exit_to_record_ms={:.3f}\n",
               Milliseconds(exec_done - steady_start),
               Milliseconds(std::chrono::steady_clock::now() - exited));
  }
  return exit_code;
}
