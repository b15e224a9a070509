// Prints what the systemd source reads from a manager, as the JSON the mapping's fixtures use:
//   systemd_capture [BUS_ADDRESS]
// Used to capture fixtures from a real systemd, and by the real-systemd test to see the bus read.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "sources/systemd/manager_bus.h"

int main(int argc, char** argv) {
  schedwatch::systemd::BusOptions options;
  if (argc > 1) options.address = argv[1];
  auto reading = schedwatch::systemd::ReadManager(options);
  if (!reading) {
    std::fprintf(stderr, "systemd_capture: %s\n", reading.error().c_str());
    return 1;
  }
  std::printf("%s\n", schedwatch::systemd::ToJson(*reading).dump(1).c_str());
  return 0;
}
