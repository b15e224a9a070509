// The `crontab` source type as the spec sees it: its settings, decoded without I/O, and Debian
// cron's reading of a schedule (its day rule, @reboot, its handling of DST changes).
#pragma once

#include <string>
#include <vector>

#include "schedwatch/source_type.h"

namespace schedwatch::crontab {

struct CrontabSettings : SourceSettings {
  std::string root;                // prefix of every path, without a trailing '/'; "" for none
  std::vector<std::string> paths;  // absolute; empty: the source's defaults
  bool journal = false;            // history: journal (else syslog)
  std::string syslog = "/var/log/syslog";
  std::string journal_directory;  // empty: the system journal
  bool history_stated = false;    // history: or syslog: is written; else discover looks for it
};

const SourceDescriptor& Descriptor();

}  // namespace schedwatch::crontab
