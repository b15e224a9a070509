// The `systemd` source type as the spec sees it: its settings, decoded without I/O, and systemd's
// calendar expressions (OnCalendar=) as its schedules.
#pragma once

#include <string>

#include "schedwatch/source_type.h"

namespace schedwatch::systemd {

struct SystemdSettings : SourceSettings {
  // A D-Bus address ("unix:path=/proc/PID/root/run/dbus/system_bus_socket"); empty: the host's
  // system bus.
  std::string bus_address;
  // Absolute: a journal directory to read (a container's /var/log/journal); empty: the host's.
  std::string journal_directory;
  // Prefix of the unit files' paths the manager reports, and of the directory reconcile writes
  // to (a container's root seen from the host); "" for none, without a trailing '/'.
  std::string root;
  // Where reconcile writes unit files it creates, under `root`.
  std::string unit_directory = "/etc/systemd/system";
};

const SourceDescriptor& Descriptor();

}  // namespace schedwatch::systemd
