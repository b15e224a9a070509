// `discover` for crontabs: every entry cron would run, marked or not, the files it would not
// run, role suggestions from the file and the command, and markers written into the files.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sources/crontab/crontab_file.h"
#include "sources/crontab/crontab_source.h"
#include "sources/discoverer.h"

namespace schedwatch::crontab {

// Words for a role from where the entry is and what it runs, the same on every machine:
// "/etc/cron.d/sysstat" running "command -v debian-sa1 > /dev/null && debian-sa1 1 1" gives
// "sysstat-debian-sa1"; /etc/crontab's "run-parts --report /etc/cron.daily" gives "cron-daily";
// alice's crontab running "/home/alice/bin/sync --all" gives "alice-sync". Guards (`test -x`,
// `[ ... ]`, `command -v`) are passed over; for a runner (run-parts, sh, php, invoke-rc.d) its
// first argument names the job. Not yet valid or unique: discover makes it so.
std::string SuggestRole(const std::string& file, CrontabKind kind, const std::string& user,
                        std::string_view command);

// The marker line for `role`: "# schedwatch: role=ROLE spec_version=V".
std::string MarkerLine(const std::string& role, const std::string& spec_version);

// `text` with each marker line put above its (1-based) entry line, checked by reading the
// result as cron would: the same entries, schedules, users and commands, in the same order,
// the targeted ones now carrying their roles, and cron still loading the file. An Error says
// why the file is refused (cron does not load it, a line is no unmarked entry, the check).
Result<std::string> InsertMarkers(std::string_view text, CrontabKind kind, const std::string& owner,
                                  const UserTable* users,
                                  const std::vector<std::pair<int, std::string>>& markers);

// Where cron logs on the host `options` reads, for a source block that does not say: syslog
// when its file exists (even when the journal has cron's lines too: the file is read from where
// it stopped, with no journalctl at each refresh), else the journal when it holds a line of
// cron's (identifier CRON or cron); neither: no key, and why. `options.journal` is set to the
// choice.
ChosenSetting FindHistory(CrontabSourceOptions& options, const ListContext& context);

class CrontabDiscoverer : public Discoverer {
 public:
  // `find_history`: the spec does not say where cron logs (no history: or syslog:); look
  // (FindHistory), read the runs there and tell the draft.
  explicit CrontabDiscoverer(CrontabSourceOptions options, bool find_history = false);
  Result<Discovery> Discover(const ListContext& context) override;
  std::string MarkerInstructions(const FoundObject& object, const std::string& role,
                                 const std::string& spec_version) const override;
  bool CanWriteMarkers() const override { return true; }
  Result<std::vector<std::string>> WriteMarkers(const std::vector<MarkerToWrite>& markers) override;

 private:
  // One file: read it safely, insert, back it up, replace it atomically.
  Result<std::string> WriteFileMarkers(const std::string& file,
                                       const std::vector<const MarkerToWrite*>& markers);

  CrontabSourceOptions options_;
  bool find_history_;
  std::map<std::string, CrontabKind> kinds_;  // of the files discovered, by file
  std::map<std::string, std::string> users_;  // the owner of each user crontab, by file
};

Result<std::unique_ptr<Discoverer>> MakeCrontabDiscoverer(const SourceOptions& options);

}  // namespace schedwatch::crontab
