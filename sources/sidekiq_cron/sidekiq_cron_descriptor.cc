#include "sources/sidekiq_cron/sidekiq_cron_descriptor.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "schedwatch/schedule.h"
#include "schedwatch/spec.h"

namespace schedwatch::sidekiq_cron {
namespace {

bool ParseInt(std::string_view text, int& out, int min, int max) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max) {
    return false;
  }
  out = value;
  return true;
}

class SidekiqCronDescriptor : public SourceDescriptor {
 public:
  std::string_view type() const override { return "sidekiq_cron"; }

  const std::vector<SettingKey>& settings_keys() const override {
    static const std::vector<SettingKey> keys{{"url"},       {"password_file"},  {"password_env"},
                                              {"namespace"}, {"local_timezone"}, {"timeout"},
                                              {"runs_dir"}};
    return keys;
  }

  std::unique_ptr<SourceSettings> DecodeSettings(SettingsReader& reader) const override {
    auto settings = std::make_unique<SidekiqCronSettings>();
    ReadCommonSettings(reader, *settings);
    if (auto url = reader.String("url")) {
      if (std::string why = CheckRedisUrl(*url); !why.empty()) reader.Problem("url", why);
      settings->url = *url;
    }
    settings->password_file = reader.Path("password_file").value_or("");
    settings->password_env = reader.String("password_env").value_or("");
    if (!settings->password_file.empty() && !settings->password_env.empty()) {
      reader.Problem("password_env", "password_file and password_env exclude each other");
    }
    if (auto prefix = reader.String("namespace")) {
      if (prefix->empty() || std::any_of(prefix->begin(), prefix->end(), [](char c) {
            return static_cast<unsigned char>(c) <= 0x20 || c == 0x7f;
          })) {
        reader.Problem("namespace", "expected a prefix without blanks, as in \"myapp\"");
      }
      settings->namespace_ = *prefix;
    }
    if (auto zone = reader.String("local_timezone")) {
      if (FindZone(*zone) == nullptr) {
        reader.Problem("local_timezone", fmt::format("unknown time zone \"{}\"", *zone));
      }
      settings->local_timezone = *zone;
    }
    return settings;
  }

  std::string RunHistoryOrigin(const SourceSettings&) const override {
    return "Sidekiq-cron's jid history against Sidekiq's retry, dead and work sets";
  }

  CronDialect dialect() const override { return CronDialect::kSidekiqCron; }
  // fugit follows the zone's wall clock.
  DstPolicy dst_policy() const override { return DstPolicy::kWallClock; }
  // Sidekiq-cron's poller looks every 30 s (cron_poll_interval): a run is enqueued that late.
  std::int64_t StartLatency(const SourceSettings&) const override { return 30; }
};

}  // namespace

std::string CheckRedisUrl(std::string_view url) {
  auto address = ParseRedisUrl(url);
  return address ? std::string() : address.error();
}

Result<RedisAddress> ParseRedisUrl(std::string_view url) {
  RedisAddress address;
  if (url.rfind("rediss://", 0) == 0) {
    return Error{
        "rediss:// needs TLS, which Debian 12's hiredis 0.14 lacks (hiredis_ssl came with "
        "1.0): reach Redis over a unix socket, or through a local TLS tunnel (stunnel) at "
        "redis://127.0.0.1:PORT"};
  }
  if (url.rfind("unix:", 0) == 0) {
    std::string_view path = url.substr(5);
    if (path.rfind("//", 0) == 0) path.remove_prefix(2);  // unix:///run/redis.sock
    std::size_t query = path.find('?');
    if (query != std::string_view::npos) {
      std::string_view rest = path.substr(query + 1);
      path = path.substr(0, query);
      if (rest.rfind("db=", 0) != 0 || !ParseInt(rest.substr(3), address.db, 0, 65535)) {
        return Error{"expected unix:/path/to/redis.sock, optionally ?db=N"};
      }
    }
    if (path.empty() || path.front() != '/') {
      return Error{"expected unix:/path/to/redis.sock (an absolute path)"};
    }
    address.socket = std::string(path);
    return address;
  }
  if (url.rfind("redis://", 0) != 0) {
    return Error{"expected redis://host:port/db or unix:/path/to/redis.sock"};
  }
  std::string_view rest = url.substr(8);
  std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (authority.find('@') != std::string_view::npos) {
    return Error{"credentials in the url are refused: set password_file or password_env"};
  }
  if (slash != std::string_view::npos) {
    std::string_view db = rest.substr(slash + 1);
    if (!db.empty() && !ParseInt(db, address.db, 0, 65535)) {
      return Error{"expected a database number after the host, as in redis://host:6379/0"};
    }
  }
  std::size_t colon = authority.rfind(':');
  if (!authority.empty() && authority.front() == '[') {  // [::1]:6379
    std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return Error{"an IPv6 host without its ']'"};
    address.host = std::string(authority.substr(1, close - 1));
    colon = authority.size() > close + 1 && authority[close + 1] == ':' ? close + 1
                                                                        : std::string_view::npos;
  } else {
    address.host = std::string(authority.substr(0, colon));
  }
  if (address.host.empty()) address.host = "127.0.0.1";
  if (colon != std::string_view::npos &&
      !ParseInt(authority.substr(colon + 1), address.port, 1, 65535)) {
    return Error{"expected a port from 1 to 65535 after the host"};
  }
  return address;
}

const SourceDescriptor& Descriptor() {
  static const SidekiqCronDescriptor descriptor;
  return descriptor;
}

}  // namespace schedwatch::sidekiq_cron
