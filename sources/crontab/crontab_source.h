// The `crontab` source: Debian cron's crontab files as the live list, cron's own log lines as the
// run history.
//
//   host-cron:
//     type: crontab
//     paths: [/etc/crontab, /etc/cron.d, /var/spool/cron/crontabs]   # the default
//     history: syslog              # or journal (journalctl -t CRON -o json)
//     syslog: /var/log/syslog      # the default
//     journal_directory: DIR       # journalctl --directory; default: the system journal
//     root: /                      # prefix of every path (tests, a host mounted in a container)
//
// A path is a file or a directory of crontabs; one named `crontabs` (or inside one) holds user
// crontabs without a user field, the others are system crontabs. Files are checked as cron
// checks them (name, owner, mode, links, syntax): what cron would not run is no live object, and
// is reported as a problem. A configured path that cannot be read fails the whole list (roles
// become unknown, never missing); a log that cannot be read leaves the list standing, without
// its runs (SourceSnapshot::history_error).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "sources/crontab/cron_log.h"
#include "sources/crontab/crontab_descriptor.h"
#include "sources/crontab/crontab_file.h"
#include "sources/source.h"

namespace schedwatch::crontab {

struct CrontabSourceOptions {
  std::string root;  // prefix of every path below; empty: none
  std::vector<std::string> paths = {"/etc/crontab", "/etc/cron.d", "/var/spool/cron/crontabs"};
  bool journal = false;  // history from journalctl instead of the syslog file
  std::string syslog = "/var/log/syslog";
  std::string journal_directory;  // empty: the system journal
  std::string journalctl = "journalctl";
  long trusted_uid = 0;                        // the owner cron accepts for system crontabs: root
  const date::time_zone* zone = nullptr;       // of old-style syslog times; null: the host's zone
  std::size_t max_backlog_bytes = 256u << 20;  // of a syslog file opened for the first time
  std::size_t problems_per_reason = 100;       // log problems listed per refresh and reason
  ShardAssignment shard;                       // the runs of other shards' roles are not kept
};

// Reads a growing log file: only the bytes appended since the last call, following rotation
// (a new inode at the path: the old file is read to its end first) and truncation (the file is
// shorter than what was read, or its first bytes changed: copytruncate and new lines since).
class LogTail {
 public:
  LogTail(std::string path, std::size_t max_backlog)
      : path_(std::move(path)), max_backlog_(max_backlog) {}
  ~LogTail();
  LogTail(const LogTail&) = delete;
  LogTail& operator=(const LogTail&) = delete;

  // `consume` gets the unread text in chunks and returns how many bytes it used (whole lines);
  // the rest is offered again. `restart` is called when reading starts over (rotation,
  // truncation), with true when the first line is a partial one to skip (a first read that
  // leaves out an old backlog).
  using Consume = std::function<std::size_t(std::string_view)>;
  using Restart = std::function<void(bool skip_partial_line)>;
  Result<bool> Read(const Consume& consume, const Restart& restart,
                    const std::atomic<bool>* cancelled);

  void Swap(LogTail& other);

 private:
  Result<bool> Drain(const Consume& consume, const std::atomic<bool>* cancelled);

  std::string path_;
  std::size_t max_backlog_;
  int fd_ = -1;
  std::uint64_t device_ = 0, inode_ = 0;
  std::int64_t offset_ = 0;  // of the first byte not consumed
  std::string head_;         // the file's first bytes as read, to notice it was rewritten
};

// Everything the crontabs hold, for discover: entries with or without a marker, and the files
// cron would not run, marked or not.
struct CrontabContents {
  struct Found {
    std::string file;  // as configured ("/etc/cron.d/sysstat"), not under the root
    CrontabKind kind = CrontabKind::kSystem;
    CrontabEntry entry;
  };
  std::vector<Found> entries;  // in path order, files by name, lines in order
  std::vector<std::pair<std::string, std::string>> not_run;  // file and why cron skips it
  // Runs by "<file>:<line>" of the entry, from cron's log; empty with history_error set when
  // the log could not be read (the crontabs still were).
  std::map<std::string, RunHistory> history;
  std::string history_error;
};

class CrontabSource : public Source {
 public:
  explicit CrontabSource(CrontabSourceOptions options);
  Result<SourceSnapshot> List(const ListContext& context) override;
  // Everything, not only what carries a marker (List is unchanged). An Error: the crontabs
  // could not be read.
  Result<CrontabContents> ListEverything(const ListContext& context);
  // From a source reading the same log: where it stopped and the runs it saw, which a rotated
  // log could not give again.
  void InheritCaches(Source& previous) override;
  // Forgets the runs of `kept_roles` that read `news_read` showed, and those of reads before.
  void Used(std::uint64_t news_read, const std::vector<std::string>& kept_roles) override;

 private:
  // What cron log lines name, user and command as logged, each with the entry whose runs it can
  // be (an index: into the snapshot's objects for List, into entry ids for ListEverything). The
  // names of the entries Added share one buffer, 16 bytes an entry besides its text (100,000
  // entries: 5 MB; a string each took 9 MB); a list Appended from others shares their buffers,
  // so a list made of cached files' lists copies no name.
  class LoggedEntries {
   public:
    void Reserve(std::size_t entries) { entries_.reserve(entries); }
    void Add(std::string_view user, std::string_view command, std::uint32_t object);
    void Seal();  // done adding: the names move into a shared text of their own
    // Each of sealed `other`'s entries, its object `first_object` further on.
    void Append(const LoggedEntries& other, std::uint32_t first_object);
    void Sort();  // once every entry is added or appended, before ObjectsOf
    // The objects of the entries named so, in no order, into `objects`.
    void ObjectsOf(std::string_view user, std::string_view command,
                   std::vector<std::uint32_t>& objects) const;
    std::size_t size() const { return entries_.size(); }

   private:
    // Where an entry's name is: an offset into `adding_` until Seal, then an address in one of
    // `texts_`, which keep it alive.
    struct Entry {
      std::uintptr_t name = 0;
      std::uint32_t size = 0;
      std::uint32_t object = 0;
    };
    std::string_view Name(const Entry& entry) const {
      return {reinterpret_cast<const char*>(entry.name), entry.size};
    }
    std::string adding_;      // each Added entry's user, '\0' and command, before Seal
    std::size_t sealed_ = 0;  // entries before this one are sealed
    std::vector<SharedText> texts_;
    std::vector<Entry> entries_;
  };
  // What one crontab file adds to a list, kept while its text and the users its parse looked
  // up stay the same: a quiet refresh, and the read that confirms an absence right after it,
  // parse no crontab again (100,000 entries: 0.14 s a list).
  struct FileVersion {
    std::uint64_t device = 0, inode = 0;
    std::int64_t changed_seconds = 0, changed_nanoseconds = 0;
    std::size_t size = 0, text_hash = 0;
    friend bool operator==(const FileVersion& a, const FileVersion& b) {
      return std::tie(a.device, a.inode, a.changed_seconds, a.changed_nanoseconds, a.size,
                      a.text_hash) == std::tie(b.device, b.inode, b.changed_seconds,
                                               b.changed_nanoseconds, b.size, b.text_hash);
    }
  };
  struct ParsedFile {
    FileVersion version;
    UserTable::Lookups users;
    std::vector<SourceProblem> problems;
    std::string ignored_because;      // cron skips the whole file
    std::vector<LiveObject> objects;  // this shard's
    LoggedEntries logged;             // the enabled ones', numbered within `objects`
  };
  // What parsing `text` gives, all but its version.
  ParsedFile Parse(std::string_view text, const std::string& shown, CrontabKind kind,
                   const std::string& user, UserTable& users, CrontabContents* everything) const;
  // The snapshot's objects and problems; the enabled entries. `everything`: also collect what
  // List leaves out.
  Result<LoggedEntries> ReadCrontabs(SourceSnapshot& snapshot,
                                     CrontabContents* everything = nullptr);
  // The runs of one role that no snapshot the refresher used has shown yet: runs that ended and
  // starts of -L 1, with the number of the read that last added to them.
  struct News {
    RunHistory history;
    std::uint64_t read = 0;
  };
  // Reads cron's log into `news` (as read `read_number`), under the names `name` gives each
  // entry's index; then `history` gets the news and the runs still going.
  Result<bool> ReadRuns(const ListContext& context, const LoggedEntries& logged,
                        const std::function<std::string_view(std::uint32_t)>& name,
                        std::map<std::string, News>& news, std::uint64_t read_number,
                        std::map<std::string, RunHistory>& history);
  // `each_chunk` is called after each chunk read is parsed into `batch`.
  Result<bool> ReadHistory(const ListContext& context, CronLogBatch& batch,
                           const std::function<void()>& each_chunk);
  Result<bool> ReadJournal(const ListContext& context, CronLogBatch& batch,
                           const std::function<void()>& each_chunk);

  CrontabSourceOptions options_;
  LogTail tail_;
  CronLogState log_state_;
  std::string journal_cursor_;
  // By role. A role the refresher keeps is here only until a snapshot it used showed it: the
  // exporter keeps runs and summaries once, not here as well (100,000 roles: 26 MB, held twice
  // while a snapshot was copied). A role it does not keep stays, as a reloaded spec may add it.
  std::map<std::string, News> news_;
  std::uint64_t reads_ = 0;  // snapshots made by List
  // Objects the last list found: the next list's room, reserved at once (grown by doubling, the
  // list of 100,000 objects was held twice while it moved, and up to half of it was spare).
  std::size_t objects_last_ = 0;
  std::map<std::string, ParsedFile> parsed_files_;  // by path as shown: the last list's files
  ProblemSink log_problems_;                        // of the current refresh
  std::int64_t log_problems_now_ = -1;
};

// The options a spec's crontab source block gives.
Result<CrontabSourceOptions> CrontabOptionsFor(const SourceOptions& options);
Result<std::unique_ptr<Source>> MakeCrontabSource(const SourceOptions& options);

}  // namespace schedwatch::crontab
