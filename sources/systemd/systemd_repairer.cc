#include "sources/systemd/systemd_repairer.h"

#include <fmt/format.h>

#include <chrono>

#include "schedwatch/classify.h"
#include "schedwatch/platform/file.h"
#include "sources/systemd/manager_bus.h"
#include "sources/systemd/systemd_descriptor.h"
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
    std::string directory = settings_.root + settings_.unit_directory;
    std::string timer_path = directory + "/" + timer;
    std::string service_path = directory + "/" + service;
    // Never over a unit someone else has: the service first, and nothing if either is there.
    auto wrote_service =
        platform::WriteFileAtomically(service_path, *service_text, 0644, platform::Existing::kKeep);
    if (!wrote_service) return Error{wrote_service.error()};
    if (!*wrote_service) return Creation{service_path, true};
    auto wrote_timer =
        platform::WriteFileAtomically(timer_path, text, 0644, platform::Existing::kKeep);
    if (!wrote_timer) return Error{wrote_timer.error()};
    if (!*wrote_timer) return Creation{timer_path, true};
    auto manager = systemd::ManagerConnection::Open(settings_.bus_address, kCallTimeout);
    if (!manager) return Error{manager.error()};
    if (auto r = manager->Reload(); !r) return Error{r.error()};
    if (auto r = manager->EnableUnitFiles(timer); !r) return Error{r.error()};
    if (auto r = manager->Reload(); !r) return Error{r.error()};
    if (auto r = manager->StartUnit(timer); !r) return Error{r.error()};
    return Creation{timer_path};
  }

 private:
  static std::string ServiceName(const std::string& timer) {
    return timer.substr(0, timer.size() - 6) + ".service";
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
