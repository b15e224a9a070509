#include "sources/celery_beat/celery_beat_db.h"

#include <fmt/format.h>
#include <libpq-fe.h>
#include <sqlite3.h>

#include <functional>
#include <memory>
#include <string_view>

#include "sources/token.h"

namespace schedwatch::celery_beat {
namespace {

constexpr std::string_view kSqlitePrefix = "sqlite://";

// One query for both databases; `epoch` turns a timestamp column into Unix seconds.
std::string TaskQuery(const char* epoch) {
  auto e = [epoch](const char* column) { return fmt::format(fmt::runtime(epoch), column); };
  return fmt::format(
      "SELECT t.name, t.task, t.enabled, t.one_off, {}, {}, t.description, t.total_run_count, "
      "c.minute, c.hour, c.day_of_month, c.month_of_year, c.day_of_week, c.timezone, "
      "i.every, i.period, s.event, {} "
      "FROM django_celery_beat_periodictask t "
      "LEFT JOIN django_celery_beat_crontabschedule c ON c.id = t.crontab_id "
      "LEFT JOIN django_celery_beat_intervalschedule i ON i.id = t.interval_id "
      "LEFT JOIN django_celery_beat_solarschedule s ON s.id = t.solar_id "
      "LEFT JOIN django_celery_beat_clockedschedule k ON k.id = t.clocked_id "
      "ORDER BY t.id",
      e("t.last_run_at"), e("t.expires"), e("k.clocked_time"));
}

// The newest results of each periodic task (else of each Celery task).
std::string ResultQuery(const char* epoch) {
  auto e = [epoch](const char* column) { return fmt::format(fmt::runtime(epoch), column); };
  return fmt::format(
      "SELECT periodic_task_name, task_name, status, created, done FROM (SELECT "
      "periodic_task_name, task_name, status, {} AS created, {} AS done, ROW_NUMBER() OVER "
      "(PARTITION BY COALESCE(periodic_task_name, task_name) ORDER BY id DESC) AS n "
      "FROM django_celery_results_taskresult) r WHERE n <= {}",
      e("date_created"), e("date_done"), kResultsPerTask);
}

// A libpq message without the password, should a server or libpq ever echo it.
std::string Redacted(std::string message, const std::string& password) {
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  return RedactToken(message, password);
}

std::string PasswordOf(const std::string& dsn) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(dsn.c_str(), &error);
  PQfreemem(error);
  std::string password;
  for (PQconninfoOption* o = options; o != nullptr && o->keyword != nullptr; ++o) {
    if (std::string_view(o->keyword) == "password" && o->val != nullptr) password = o->val;
  }
  PQconninfoFree(options);
  return password;
}

using PgConnection = std::unique_ptr<PGconn, decltype(&PQfinish)>;

// A session whose statements stop at `timeout`, read-only unless `write` (later keywords
// override the DSN's).
Result<PgConnection> ConnectPostgres(const std::string& dsn, const std::string& password,
                                     std::chrono::seconds timeout, bool write) {
  char* parse_error = nullptr;
  PQconninfoOption* parsed = PQconninfoParse(dsn.c_str(), &parse_error);
  if (parsed == nullptr) {
    std::string message = parse_error != nullptr ? Redacted(parse_error, password) : "unreadable";
    PQfreemem(parse_error);
    return Error{fmt::format("the connection string does not parse: {}", message)};
  }
  PQconninfoFree(parsed);
  const std::string seconds = std::to_string(timeout.count());
  const std::string options =
      fmt::format("{}-c statement_timeout={}s", write ? "" : "-c default_transaction_read_only=on ",
                  timeout.count());
  const char* keys[] = {"dbname", "connect_timeout", "options", "application_name", nullptr};
  const char* values[] = {dsn.c_str(), seconds.c_str(), options.c_str(),
                          write ? "schedwatch-reconcile" : "schedwatch", nullptr};
  PgConnection conn(PQconnectdbParams(keys, values, 1), PQfinish);
  if (conn == nullptr || PQstatus(conn.get()) != CONNECTION_OK) {
    return Error{fmt::format("cannot connect to PostgreSQL: {}",
                             Redacted(PQerrorMessage(conn.get()), password))};
  }
  return conn;
}

using SqliteDb = std::unique_ptr<sqlite3, decltype(&sqlite3_close)>;

// Never created: a missing file is an error, not an empty database.
Result<SqliteDb> OpenSqlite(const std::string& path, int flags, std::chrono::seconds timeout) {
  sqlite3* raw = nullptr;
  const int opened = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  SqliteDb db(raw, sqlite3_close);
  if (opened != SQLITE_OK) {
    return Error{fmt::format("cannot open SQLite database {}{}: {}", path,
                             flags & SQLITE_OPEN_READWRITE ? " to write" : "",
                             raw != nullptr ? sqlite3_errmsg(raw) : sqlite3_errstr(opened))};
  }
  sqlite3_busy_timeout(raw, static_cast<int>(timeout.count() * 1000));
  return db;
}

Result<Tables> ReadPostgres(const std::string& dsn, std::chrono::seconds timeout,
                            const std::atomic<bool>* cancelled) {
  const std::string password = PasswordOf(dsn);
  auto connected = ConnectPostgres(dsn, password, timeout, false);
  if (!connected) return Error{connected.error()};
  PgConnection conn = std::move(*connected);
  if (cancelled != nullptr && cancelled->load()) return Error{"cancelled"};
  const char* epoch = "EXTRACT(EPOCH FROM {})::bigint";
  Tables tables;
  std::string error;
  // Sends `sql` and keeps the rows of its SELECT, if any, in `rows` (`width` columns).
  auto read = [&](const std::string& sql, int width, std::size_t max_rows, std::vector<Row>* rows) {
    if (!error.empty()) return;
    if (!PQsendQuery(conn.get(), sql.c_str())) {
      error = Redacted(PQerrorMessage(conn.get()), password);
      return;
    }
    while (PGresult* raw = PQgetResult(conn.get())) {
      std::unique_ptr<PGresult, decltype(&PQclear)> result(raw, PQclear);
      const ExecStatusType status = PQresultStatus(raw);
      if (status != PGRES_TUPLES_OK) {
        if (status != PGRES_COMMAND_OK && error.empty()) {
          error = Redacted(PQresultErrorMessage(raw), password);
        }
        continue;
      }
      if (rows == nullptr || !error.empty()) continue;
      if (PQnfields(raw) != width) {
        error = fmt::format("expected {} columns, got {}", width, PQnfields(raw));
        continue;
      }
      const int count = PQntuples(raw);
      if (static_cast<std::size_t>(count) > max_rows) {
        error = fmt::format("more than {} rows", max_rows);
        continue;
      }
      rows->reserve(count);
      for (int r = 0; r < count; ++r) {
        Row row(width);
        for (int c = 0; c < width; ++c) {
          if (PQgetisnull(raw, r, c)) continue;
          row[c].emplace(PQgetvalue(raw, r, c), PQgetlength(raw, r, c));
          tables.bytes += row[c]->size();
        }
        rows->push_back(std::move(row));
      }
    }
  };
  read("BEGIN TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, 0, nullptr);
  read(TaskQuery(epoch), kTaskColumns, kMaxTasks, &tables.tasks);
  if (!error.empty()) return Error{fmt::format("reading the periodic tasks: {}", error)};
  std::vector<Row> exists;
  read("SELECT 1 WHERE to_regclass('django_celery_results_taskresult') IS NOT NULL", 1, 1, &exists);
  if (!exists.empty()) {
    read(ResultQuery(epoch), kResultColumns, kMaxTasks * kResultsPerTask,
         &tables.results.emplace());
  }
  if (!error.empty()) {
    tables.results.reset();
    tables.results_error = std::move(error);
    error.clear();
  }
  read("COMMIT", 0, 0, nullptr);  // a ROLLBACK after an error
  return tables;
}

Result<Tables> ReadSqlite(const std::string& path, std::chrono::seconds timeout,
                          const std::atomic<bool>* cancelled) {
  auto opened = OpenSqlite(path, SQLITE_OPEN_READONLY, timeout);
  if (!opened) return Error{opened.error()};
  SqliteDb db = std::move(*opened);
  sqlite3* raw = db.get();
  // Stop a long read at the timeout or when the refresh gives up.
  struct Stop {
    std::chrono::steady_clock::time_point deadline;
    const std::atomic<bool>* cancelled;
  } stop{std::chrono::steady_clock::now() + timeout, cancelled};
  sqlite3_progress_handler(
      raw, 10000,
      [](void* data) {
        const auto* s = static_cast<Stop*>(data);
        return (s->cancelled != nullptr && s->cancelled->load()) ||
                       std::chrono::steady_clock::now() > s->deadline
                   ? 1
                   : 0;
      },
      &stop);
  if (sqlite3_exec(raw, "BEGIN", nullptr, nullptr, nullptr) != SQLITE_OK) {
    return Error{fmt::format("SQLite {}: {}", path, sqlite3_errmsg(raw))};
  }
  // A time SQLite cannot read comes back as "invalid", not as NULL (never run).
  // A time SQLite cannot read comes back as "invalid", not as NULL (never run).
  const char* epoch =
      "CASE WHEN {0} IS NULL THEN NULL ELSE COALESCE(CAST(strftime('%s', {0}) AS INTEGER), "
      "'invalid') END";
  Tables tables;
  auto read = [&](const std::string& sql, int width, std::size_t max_rows,
                  std::vector<Row>& rows) -> std::string {
    sqlite3_stmt* statement = nullptr;
    if (sqlite3_prepare_v2(raw, sql.c_str(), -1, &statement, nullptr) != SQLITE_OK) {
      return sqlite3_errmsg(raw);
    }
    std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)> guard(statement, sqlite3_finalize);
    if (sqlite3_column_count(statement) != width) return "unexpected columns";
    int step;
    while ((step = sqlite3_step(statement)) == SQLITE_ROW) {
      if (rows.size() >= max_rows) return fmt::format("more than {} rows", max_rows);
      Row row(width);
      for (int c = 0; c < width; ++c) {
        if (sqlite3_column_type(statement, c) == SQLITE_NULL) continue;
        const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(statement, c));
        row[c].emplace(text != nullptr ? text : "",
                       static_cast<std::size_t>(sqlite3_column_bytes(statement, c)));
        tables.bytes += row[c]->size();
      }
      rows.push_back(std::move(row));
    }
    if (step == SQLITE_DONE) return {};
    return step == SQLITE_INTERRUPT ? "interrupted (timeout)" : sqlite3_errmsg(raw);
  };
  std::string error = read(TaskQuery(epoch), kTaskColumns, kMaxTasks, tables.tasks);
  if (!error.empty()) return Error{fmt::format("reading the periodic tasks: {}", error)};
  std::vector<Row> exists;
  error = read(
      "SELECT 1 FROM sqlite_master WHERE type = 'table' AND "
      "name = 'django_celery_results_taskresult'",
      1, 1, exists);
  if (error.empty() && !exists.empty()) {
    error = read(ResultQuery(epoch), kResultColumns, kMaxTasks * kResultsPerTask,
                 tables.results.emplace());
  }
  if (!error.empty()) {
    tables.results.reset();
    tables.results_error = std::move(error);
  }
  sqlite3_exec(raw, "COMMIT", nullptr, nullptr, nullptr);
  return tables;
}

using Params = std::vector<std::optional<std::string>>;
// Runs one statement (parameters $1, $2, ...): the first cell of its first row, if any. Sets
// `*taken` on a unique violation.
using Statement =
    std::function<Result<std::optional<std::string>>(const std::string&, const Params&, bool*)>;

// The writes of InsertTask, the same for both databases; `now` is the database's current time
// as Django stores it. The caller commits when this returns true.
Result<bool> InsertWith(const Statement& run, const std::string& now, const NewTask& task) {
  bool taken = false;
  auto existing =
      run("SELECT 1 FROM django_celery_beat_periodictask WHERE name = $1", {task.name}, &taken);
  if (!existing) return Error{existing.error()};
  if (*existing) return false;
  std::optional<std::string> crontab_id, interval_id;
  const char* table = task.crontab ? "crontabschedule" : "intervalschedule";
  const std::vector<std::string> columns =
      task.crontab ? std::vector<std::string>{"minute",        "hour",        "day_of_month",
                                              "month_of_year", "day_of_week", "timezone"}
                   : std::vector<std::string>{"every", "period"};
  Params values = task.crontab ? Params(task.crontab->begin(), task.crontab->end())
                               : Params{task.every, task.period};
  std::string names, where, placeholders;
  for (std::size_t n = 1; n <= columns.size(); ++n) {
    const char* comma = n > 1 ? ", " : "";
    names += comma + columns[n - 1];
    where += fmt::format("{}{} = ${}", n > 1 ? " AND " : "", columns[n - 1], n);
    placeholders += fmt::format("{}${}", comma, n);
  }
  // An equal schedule is shared, as Django's admin and get_or_create share them.
  auto id = run(fmt::format("SELECT id FROM django_celery_beat_{} WHERE {} ORDER BY id LIMIT 1",
                            table, where),
                values, &taken);
  if (id && !*id) {
    id = run(fmt::format("INSERT INTO django_celery_beat_{} ({}) VALUES ({}) RETURNING id", table,
                         names, placeholders),
             values, &taken);
  }
  if (!id || !*id) return Error{id ? "the schedule row got no id" : id.error()};
  (task.crontab ? crontab_id : interval_id) = *id;
  auto inserted = run(
      fmt::format("INSERT INTO django_celery_beat_periodictask (name, task, args, kwargs, queue, "
                  "enabled, total_run_count, date_changed, description, crontab_id, interval_id, "
                  "one_off, headers) VALUES ($1, $2, $3, $4, $5, TRUE, 0, {}, $6, $7, $8, FALSE, "
                  "'{{}}')",
                  now),
      {task.name, task.task, task.args, task.kwargs,
       task.queue.empty() ? std::nullopt : std::optional<std::string>(task.queue), task.description,
       crontab_id, interval_id},
      &taken);
  if (!inserted) return taken ? Result<bool>(false) : Error{inserted.error()};
  // PeriodicTasks.changed: a running DatabaseScheduler sees a newer last_update and reloads.
  auto bumped =
      run(fmt::format("INSERT INTO django_celery_beat_periodictasks (ident, last_update) VALUES "
                      "(1, {0}) ON CONFLICT (ident) DO UPDATE SET last_update = {0}",
                      now),
          {}, &taken);
  if (!bumped) return Error{bumped.error()};
  return true;
}

// InsertWith between `begin` and COMMIT; rolled back when it writes nothing or fails.
Result<bool> InTransaction(const Statement& run, const char* begin, const std::string& now,
                           const NewTask& task) {
  bool taken = false;
  auto begun = run(begin, {}, &taken);
  if (!begun) return Error{begun.error()};
  auto inserted = InsertWith(run, now, task);
  if (inserted && *inserted) {
    auto committed = run("COMMIT", {}, &taken);
    if (!committed) return Error{committed.error()};
    return true;
  }
  run("ROLLBACK", {}, &taken);
  return inserted;
}

Result<bool> InsertPostgres(const std::string& dsn, const NewTask& task,
                            std::chrono::seconds timeout) {
  const std::string password = PasswordOf(dsn);
  auto connected = ConnectPostgres(dsn, password, timeout, true);
  if (!connected) return Error{connected.error()};
  PgConnection conn = std::move(*connected);
  Statement run = [&](const std::string& sql, const Params& params,
                      bool* taken) -> Result<std::optional<std::string>> {
    std::vector<const char*> raw;
    for (const auto& p : params) raw.push_back(p ? p->c_str() : nullptr);
    std::unique_ptr<PGresult, decltype(&PQclear)> result(
        PQexecParams(conn.get(), sql.c_str(), static_cast<int>(raw.size()), nullptr, raw.data(),
                     nullptr, nullptr, 0),
        PQclear);
    const ExecStatusType status = PQresultStatus(result.get());
    if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
      const char* state = PQresultErrorField(result.get(), PG_DIAG_SQLSTATE);
      if (taken != nullptr) *taken = state != nullptr && std::string_view(state) == "23505";
      return Error{Redacted(result ? PQresultErrorMessage(result.get()) : "no answer", password)};
    }
    if (status != PGRES_TUPLES_OK || PQntuples(result.get()) == 0 || PQnfields(result.get()) == 0 ||
        PQgetisnull(result.get(), 0, 0)) {
      return std::optional<std::string>();
    }
    return std::optional<std::string>(PQgetvalue(result.get(), 0, 0));
  };
  return InTransaction(run, "BEGIN", "now()", task);
}

Result<bool> InsertSqlite(const std::string& path, const NewTask& task,
                          std::chrono::seconds timeout) {
  auto opened = OpenSqlite(path, SQLITE_OPEN_READWRITE, timeout);
  if (!opened) return Error{opened.error()};
  SqliteDb db = std::move(*opened);
  sqlite3* raw = db.get();
  Statement run = [&](const std::string& sql, const Params& params,
                      bool* taken) -> Result<std::optional<std::string>> {
    std::string numbered = sql;  // SQLite numbers its parameters ?1, ?2
    for (auto at = numbered.find('$'); at != std::string::npos; at = numbered.find('$', at)) {
      numbered[at] = '?';
    }
    sqlite3_stmt* statement = nullptr;
    if (sqlite3_prepare_v2(raw, numbered.c_str(), -1, &statement, nullptr) != SQLITE_OK) {
      return Error{fmt::format("SQLite {}: {}", path, sqlite3_errmsg(raw))};
    }
    std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)> guard(statement, sqlite3_finalize);
    for (std::size_t i = 0; i < params.size(); ++i) {
      if (params[i]) {
        sqlite3_bind_text(statement, static_cast<int>(i + 1), params[i]->data(),
                          static_cast<int>(params[i]->size()), SQLITE_TRANSIENT);
      }
    }
    std::optional<std::string> first;
    int step;
    while ((step = sqlite3_step(statement)) == SQLITE_ROW) {
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(statement, 0));
      if (!first && text != nullptr) first.emplace(text);
    }
    if (step != SQLITE_DONE) {
      const int code = sqlite3_extended_errcode(raw);
      if (code == SQLITE_CONSTRAINT_UNIQUE || code == SQLITE_CONSTRAINT_PRIMARYKEY) {
        if (taken != nullptr) *taken = true;
      }
      return Error{fmt::format("SQLite {}: {}", path, sqlite3_errmsg(raw))};
    }
    return first;
  };
  // IMMEDIATE: the write lock from the start, so the read of the name cannot go stale.
  return InTransaction(run, "BEGIN IMMEDIATE", "strftime('%Y-%m-%d %H:%M:%f', 'now')", task);
}

}  // namespace

Result<bool> InsertTask(const std::string& dsn, const NewTask& task, std::chrono::seconds timeout) {
  if (dsn.rfind(kSqlitePrefix, 0) == 0) {
    return InsertSqlite(dsn.substr(kSqlitePrefix.size()), task, timeout);
  }
  return InsertPostgres(dsn, task, timeout);
}

Result<Tables> ReadTables(const std::string& dsn, std::chrono::seconds timeout,
                          const std::atomic<bool>* cancelled) {
  if (dsn.rfind(kSqlitePrefix, 0) == 0) {
    // sqlite:///var/lib/app/db.sqlite3: the path after the scheme's two slashes.
    return ReadSqlite(dsn.substr(kSqlitePrefix.size()), timeout, cancelled);
  }
  return ReadPostgres(dsn, timeout, cancelled);
}

}  // namespace schedwatch::celery_beat
