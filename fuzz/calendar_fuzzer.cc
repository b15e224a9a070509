// systemd calendar expressions (OnCalendar=, text from unit files and D-Bus), evaluated in UTC and
// in zones with DST. Input: the expression, optionally "\n" and an IANA zone name for the host.
#include "fuzz/fuzz_util.h"
#include "schedwatch/calendar_spec.h"
#include "schedwatch/schedule.h"
#include "schedwatch/spec.h"

namespace {

using namespace schedwatch;

constexpr std::int64_t kInstants[] = {kPeriodReference, 1711846800, 1730595600, 1728142200, 0, -1,
                                      253402300799};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text = fuzz::AsText(data, size);
  std::string_view zone_name = "Australia/Lord_Howe";
  if (auto newline = text.find('\n'); newline != std::string_view::npos) {
    zone_name = text.substr(newline + 1);
    text = text.substr(0, newline);
  }
  auto spec = CalendarSpec::Parse(text);
  if (!spec) return 0;
  // The normalised form is what systemd reports: it must read back to itself.
  auto again = CalendarSpec::Parse(spec->normalized());
  if (!again || again->normalized() != spec->normalized()) __builtin_trap();
  for (const date::time_zone* zone : {FindZone("UTC"), FindZone(zone_name)}) {
    if (zone == nullptr) continue;
    const Schedule schedule({*spec}, zone);
    for (std::int64_t at : kInstants) {
      auto next = schedule.Next(at);
      if (next && *next <= at) __builtin_trap();  // strictly later
      schedule.Previous(at);
    }
    schedule.Period(kPeriodReference);
  }
  return 0;
}
