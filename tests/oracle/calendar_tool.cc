// Prints systemd calendar expressions' normalised forms and elapse times, for the
// systemd-analyze oracle (systemd_calendar_oracle.py).
//
// Reads lines `expr<TAB>zone<TAB>base_usec<TAB>count` on stdin (zone: the host zone for
// expressions that name none) and writes one line per input line:
// `ok<TAB>normalized<TAB>t1<TAB>t2...` (microseconds; each elapse counted from the one before,
// as `systemd-analyze calendar --iterations` does) or `error<TAB>message`.
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "schedwatch/calendar_spec.h"
#include "schedwatch/schedule.h"

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::vector<std::string> fields;
    std::size_t start = 0;
    while (true) {
      const std::size_t tab = line.find('\t', start);
      fields.push_back(line.substr(start, tab == std::string::npos ? tab : tab - start));
      if (tab == std::string::npos) break;
      start = tab + 1;
    }
    if (fields.size() != 4) {
      std::cout << "error\texpected expr<TAB>zone<TAB>base_usec<TAB>count\n";
      continue;
    }
    auto spec = schedwatch::CalendarSpec::Parse(fields[0]);
    if (!spec) {
      std::cout << "error\t" << spec.error() << '\n';
      continue;
    }
    const date::time_zone* zone = schedwatch::FindZone(fields[1]);
    std::cout << "ok\t" << spec->normalized();
    std::optional<std::int64_t> t = std::strtoll(fields[2].c_str(), nullptr, 10);
    const int count = std::atoi(fields[3].c_str());
    for (int i = 0; i < count; ++i) {
      t = spec->NextUsec(*t, zone);
      if (!t) break;
      std::cout << '\t' << *t;
    }
    std::cout << '\n';
  }
  return 0;
}
