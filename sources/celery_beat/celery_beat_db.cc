#include "sources/celery_beat/celery_beat_db.h"

#include <fmt/format.h>
#include <libpq-fe.h>
#include <sqlite3.h>

#include <memory>
#include <string_view>

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

// A libpq message without the password, should a server or libpq ever echo it.
std::string Redacted(std::string message, const std::string& password) {
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  if (password.empty()) return message;
  for (std::size_t at; (at = message.find(password)) != std::string::npos;) {
    message.replace(at, password.size(), "<redacted>");
  }
  return message;
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

Result<Tables> ReadPostgres(const std::string& dsn, std::chrono::seconds timeout,
                            const std::atomic<bool>* cancelled) {
  const std::string password = PasswordOf(dsn);
  char* parse_error = nullptr;
  PQconninfoOption* parsed = PQconninfoParse(dsn.c_str(), &parse_error);
  if (parsed == nullptr) {
    std::string message = parse_error != nullptr ? Redacted(parse_error, password) : "unreadable";
    PQfreemem(parse_error);
    return Error{fmt::format("the connection string does not parse: {}", message)};
  }
  PQconninfoFree(parsed);
  // Later keywords override the DSN's: a read-only session whose statements stop at the timeout.
  const std::string seconds = std::to_string(timeout.count());
  const std::string options =
      fmt::format("-c default_transaction_read_only=on -c statement_timeout={}s", timeout.count());
  const char* keys[] = {"dbname", "connect_timeout", "options", "application_name", nullptr};
  const char* values[] = {dsn.c_str(), seconds.c_str(), options.c_str(), "schedwatch", nullptr};
  std::unique_ptr<PGconn, decltype(&PQfinish)> conn(PQconnectdbParams(keys, values, 1), PQfinish);
  if (conn == nullptr || PQstatus(conn.get()) != CONNECTION_OK) {
    return Error{fmt::format("cannot connect to PostgreSQL: {}",
                             Redacted(PQerrorMessage(conn.get()), password))};
  }
  if (cancelled != nullptr && cancelled->load()) return Error{"cancelled"};
  const std::string query = "BEGIN TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY; " +
                            TaskQuery("EXTRACT(EPOCH FROM {})::bigint") + "; COMMIT";
  if (!PQsendQuery(conn.get(), query.c_str())) {
    return Error{Redacted(PQerrorMessage(conn.get()), password)};
  }
  Tables tables;
  std::string error;
  while (PGresult* raw = PQgetResult(conn.get())) {
    std::unique_ptr<PGresult, decltype(&PQclear)> result(raw, PQclear);
    const ExecStatusType status = PQresultStatus(raw);
    if (status == PGRES_TUPLES_OK) {
      if (PQnfields(raw) != kTaskColumns) {
        error = fmt::format("expected {} columns, got {}", int{kTaskColumns}, PQnfields(raw));
        continue;
      }
      const int rows = PQntuples(raw);
      if (static_cast<std::size_t>(rows) > kMaxTasks) {
        error = fmt::format("{} periodic tasks, more than {}", rows, kMaxTasks);
        continue;
      }
      tables.tasks.reserve(rows);
      for (int r = 0; r < rows; ++r) {
        Row row(kTaskColumns);
        for (int c = 0; c < kTaskColumns; ++c) {
          if (PQgetisnull(raw, r, c)) continue;
          row[c].emplace(PQgetvalue(raw, r, c), PQgetlength(raw, r, c));
          tables.bytes += row[c]->size();
        }
        tables.tasks.push_back(std::move(row));
      }
    } else if (status != PGRES_COMMAND_OK && error.empty()) {
      error = Redacted(PQresultErrorMessage(raw), password);
    }
  }
  if (!error.empty()) return Error{fmt::format("reading the periodic tasks: {}", error)};
  return tables;
}

Result<Tables> ReadSqlite(const std::string& path, std::chrono::seconds timeout,
                          const std::atomic<bool>* cancelled) {
  sqlite3* raw = nullptr;
  // Read-only, never created: a missing file is an error, not an empty database.
  const int opened = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
  std::unique_ptr<sqlite3, decltype(&sqlite3_close)> db(raw, sqlite3_close);
  if (opened != SQLITE_OK) {
    return Error{fmt::format("cannot open SQLite database {}: {}", path,
                             raw != nullptr ? sqlite3_errmsg(raw) : sqlite3_errstr(opened))};
  }
  sqlite3_busy_timeout(raw, static_cast<int>(timeout.count() * 1000));
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
  const std::string query = TaskQuery(
      "CASE WHEN {0} IS NULL THEN NULL ELSE COALESCE(CAST(strftime('%s', {0}) AS INTEGER), "
      "'invalid') END");
  sqlite3_stmt* statement = nullptr;
  if (sqlite3_prepare_v2(raw, query.c_str(), -1, &statement, nullptr) != SQLITE_OK) {
    return Error{fmt::format("reading the periodic tasks: {}", sqlite3_errmsg(raw))};
  }
  std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)> guard(statement, sqlite3_finalize);
  Tables tables;
  int step;
  while ((step = sqlite3_step(statement)) == SQLITE_ROW) {
    if (tables.tasks.size() >= kMaxTasks) {
      return Error{fmt::format("more than {} periodic tasks", kMaxTasks)};
    }
    Row row(kTaskColumns);
    for (int c = 0; c < kTaskColumns; ++c) {
      if (sqlite3_column_type(statement, c) == SQLITE_NULL) continue;
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(statement, c));
      row[c].emplace(text != nullptr ? text : "",
                     static_cast<std::size_t>(sqlite3_column_bytes(statement, c)));
      tables.bytes += row[c]->size();
    }
    tables.tasks.push_back(std::move(row));
  }
  if (step != SQLITE_DONE) {
    return Error{fmt::format("reading the periodic tasks: {}", step == SQLITE_INTERRUPT
                                                                   ? "interrupted (timeout)"
                                                                   : sqlite3_errmsg(raw))};
  }
  sqlite3_exec(raw, "COMMIT", nullptr, nullptr, nullptr);
  return tables;
}

}  // namespace

Result<Tables> ReadTables(const std::string& dsn, std::chrono::seconds timeout,
                          const std::atomic<bool>* cancelled) {
  if (dsn.rfind(kSqlitePrefix, 0) == 0) {
    // sqlite:///var/lib/app/db.sqlite3: the path after the scheme's two slashes.
    return ReadSqlite(dsn.substr(kSqlitePrefix.size()), timeout, cancelled);
  }
  return ReadPostgres(dsn, timeout, cancelled);
}

}  // namespace schedwatch::celery_beat
