// Crontab files as Debian's cron reads them (system and user crontabs), an etc/passwd for the
// user table, and the command and UTF-8 helpers, on the same text. Parsed entries are checked
// for drift against a job, as the crontab source does.
#include "fuzz/fuzz_util.h"
#include "schedwatch/classify.h"
#include "sources/crontab/crontab_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace schedwatch;
  using namespace schedwatch::crontab;
  static const JobSpec job = fuzz::MakeJob("{type: crontab}", "retry", "*/10 * * * *");
  std::string_view text = fuzz::AsText(data, size);
  UserTable passwd = UserTable::FromPasswd(text);
  UserTable all = UserTable::AcceptAll();
  const ParsedCrontab parsed[] = {ParseCrontab(text, CrontabKind::kSystem, "", &passwd),
                                  ParseCrontab(text, CrontabKind::kSystem, "", nullptr),
                                  ParseCrontab(text, CrontabKind::kUser, "alice", &all)};
  for (const ParsedCrontab& crontab : parsed) {
    for (const CrontabEntry& entry : crontab.entries) {
      LiveObject object{"fuzz", entry.role, entry.schedule, "", entry.spec_version, entry.enabled};
      Drifted(job, object);
      LoggedCommand(entry.command);
    }
  }
  LoggedCommand(text);
  SanitizeUtf8(text);
  FirstInvalidUtf8Line(text);
  return 0;
}
