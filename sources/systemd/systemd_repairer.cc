#include "sources/systemd/systemd_repairer.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>
#include <vector>

#include "schedwatch/classify.h"
#include "schedwatch/platform/file.h"
#include "sources/systemd/manager_bus.h"
#include "sources/systemd/systemd_descriptor.h"
#include "sources/systemd/unit_files.h"
#include "sources/systemd/unit_markers.h"

namespace schedwatch {
namespace {

constexpr std::chrono::milliseconds kCallTimeout{30000};  // a daemon-reload may take seconds

std::string BaseName(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool EndsWith(const std::string& text, std::string_view suffix) {
  return text.size() > suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

class SystemdRepairer : public Repairer {
 public:
  explicit SystemdRepairer(const systemd::SystemdSettings& settings) : settings_(settings) {}

  Result<bool> Validate(const JobSpec& job, const std::string& text) override {
    std::string timer = BaseName(job.template_path());
    if (!EndsWith(timer, ".timer")) {
      return Error{fmt::format("the template {} is not a .timer unit file", job.template_path())};
    }
    systemd::UnitMarkers markers;
    systemd::ApplyUnitFile(text, timer, markers);
    if (!markers.error.empty()) return Error{markers.error};
    if (markers.role != job.role) {
      return Error{
          fmt::format("its {}= is \"{}\", not \"{}\"", systemd::kRoleKey, markers.role, job.role)};
    }
    std::string schedule;
    for (const auto& line : markers.on_calendar) {
      if (!schedule.empty()) schedule += '\n';
      schedule += line;
    }
    if (markers.on_calendar.empty()) schedule = kMonotonicSchedule;  // as MapTimers says
    if (Drifted(job, LiveObject("template", markers.role, schedule, "", markers.spec_version))) {
      return Error{fmt::format(
          "OnCalendar \"{}\" {}=\"{}\" differ from the spec's \"{}\" and \"{}\"", schedule,
          systemd::kSpecVersionKey, markers.spec_version, job.schedule.text(), job.spec_version)};
    }
    auto service = ReadService(job);
    if (!service) return Error{service.error()};
    return true;
  }

  Result<Creation> Create(const JobSpec& job, const std::string& text) override {
    std::string timer = BaseName(job.template_path());
    std::string service = ServiceName(timer);
    auto service_text = ReadService(job);
    if (!service_text) return Error{service_text.error()};
    // A mask is the operator's word: nothing is written where one is, nor beside it.
    for (const std::string* unit : {&timer, &service}) {
      for (const char* directory : {"", "/etc/systemd/system", "/run/systemd/system"}) {
        std::string where = *directory == '\0' ? Directory() : settings_.root + directory;
        if (systemd::IsMask(where, *unit)) {
          return Error{fmt::format("masked by the operator: systemctl unmask {}", *unit)};
        }
      }
    }
    std::string directory = Directory();
    systemd::RemoveStaleTemporaries(directory);
    std::string intent = systemd::IntentPath(directory, timer);
    bool resuming = Exists(intent);
    // Never over a unit someone else has: nothing is written when either name is taken, unless
    // by this repairer's own unfinished creation (its intent there, the very same text).
    const std::pair<const std::string*, const std::string*> files[] = {{&service, &*service_text},
                                                                       {&timer, &text}};
    std::vector<std::pair<const std::string*, const std::string*>> missing;
    for (const auto& file : files) {
      std::string path = directory + "/" + *file.first;
      if (!Exists(path)) {
        missing.push_back(file);
      } else if (!resuming || !Holds(path, *file.second)) {
        if (resuming) unlink(intent.c_str());
        return Creation{path, true};
      }
    }
    if (!resuming) {
      if (auto announced = Announce(intent, timer, service); !announced) {
        return Error{announced.error()};
      }
    }
    // A kill from here on leaves the intent: the next run finishes what is written.
    for (const auto& [name, content] : missing) {
      auto placed = systemd::CreateUnitFile(directory, *name, *content);
      if (!placed) return Error{placed.error()};
      if (*placed == systemd::Placed::kTaken) {
        unlink(intent.c_str());
        return Creation{directory + "/" + *name, true};
      }
    }
    auto manager = systemd::ManagerConnection::Open(settings_.bus_address, kCallTimeout);
    if (!manager) return Error{manager.error()};
    if (auto r = manager->Reload(); !r) return Error{r.error()};
    if (auto r = manager->EnableUnitFiles(timer); !r) return Error{r.error()};
    if (auto r = manager->Reload(); !r) return Error{r.error()};
    if (auto r = manager->StartUnit(timer); !r) return Error{r.error()};
    if (unlink(intent.c_str()) != 0 && errno != ENOENT) {
      return Error{fmt::format("cannot remove {}: {}", intent, std::strerror(errno))};
    }
    return Creation{directory + "/" + timer};
  }

  bool Unfinished(const JobSpec& job) override {
    std::string timer = BaseName(job.template_path());
    return EndsWith(timer, ".timer") && Exists(systemd::IntentPath(Directory(), timer));
  }

 private:
  static std::string ServiceName(const std::string& timer) {
    return timer.substr(0, timer.size() - 6) + ".service";
  }

  std::string Directory() const { return settings_.root + settings_.unit_directory; }

  static bool Exists(const std::string& path) {
    struct stat st {};
    return lstat(path.c_str(), &st) == 0;
  }

  // Whether `path` is a regular file holding exactly `text`: what this repairer wrote.
  static bool Holds(const std::string& path, const std::string& text) {
    struct stat st {};
    if (lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
    auto held = platform::ReadRegularFile(path, systemd::kMaxUnitFileBytes);
    return held && *held == text;
  }

  // The intent file, on disk before any unit file is.
  static Result<bool> Announce(const std::string& intent, const std::string& timer,
                               const std::string& service) {
    platform::UniqueFd fd(
        open(intent.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    std::string text = fmt::format(
        "schedwatch reconcile is creating {} and {} here; the next reconcile finishes it\n", timer,
        service);
    if (fd.get() < 0)
      return Error{fmt::format("cannot write {}: {}", intent, std::strerror(errno))};
    if (write(fd.get(), text.data(), text.size()) < 0 || fsync(fd.get()) != 0) {
      int error = errno;
      unlink(intent.c_str());  // nothing written yet: no intent either (a full disk)
      return Error{fmt::format("cannot write {}: {}", intent, std::strerror(error))};
    }
    platform::UniqueFd directory(
        open(intent.substr(0, intent.rfind('/')).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (directory.get() >= 0) fsync(directory.get());
    return true;
  }

  // The service's unit file, beside the timer's template.
  static Result<std::string> ReadService(const JobSpec& job) {
    std::string timer = BaseName(job.template_path());
    std::string path = job.template_path().substr(0, job.template_path().size() - timer.size()) +
                       ServiceName(timer);
    auto text = platform::ReadRegularFile(path, systemd::kMaxUnitFileBytes);
    if (!text) return Error{"its service: " + text.error()};
    return text;
  }

  systemd::SystemdSettings settings_;
};

}  // namespace

Result<std::unique_ptr<Repairer>> MakeSystemdRepairer(const SourceSpec& source) {
  const auto* settings = source.SettingsAs<systemd::SystemdSettings>();
  if (settings == nullptr) return Error{"the settings are not a systemd source's"};
  return std::unique_ptr<Repairer>(std::make_unique<SystemdRepairer>(*settings));
}

}  // namespace schedwatch
