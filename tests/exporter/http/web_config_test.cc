#include "exporter/http/web_config.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>

#include "exporter/http/web_rate_limit.h"
#include "exporter/http/web_tls.h"
#include "tests/test_util.h"

namespace schedwatch {
namespace {

namespace fs = std::filesystem;
using schedwatch::testing::TempDir;
using schedwatch::testing::WriteFile;

const fs::path kWebDir = fs::path(SCHEDWATCH_TEST_DIR) / "config" / "web";

// Fixture hashes (also in config/web/valid.yml), with how they were made:
// htpasswd -nbBC 10 "" "correct horse" | tr -d ':\n'   (apache2-utils' own bcrypt)
const char kCorrectHorse2y[] = "$2y$10$IPRmZJAtKtMLf2aQY/1bIeV7yhqGgnQL.BO1vG8Q5psG4IYS8vjUW";
// htpasswd -nbBC 4 "" "tr0ub4dor&3" | tr -d ':\n'
const char kTroubador2y[] = "$2y$04$FKy.9mDAyn5h9S9i4KD9rOe9WHsx1gTna0YFXfe7WPu9E9ubQKubu";
// /usr/bin/python3 -c 'import crypt; print(crypt.crypt("s3cret",
//     crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16)))'   (libxcrypt's $2b$)
const char kSecret2b[] = "$2b$04$6NjtjOisvqQkujK5IkE2fOKEyg3Bf9wSJzYMb8TnfylOXgwMwgM3G";
// the same call with the setting "$2a$04$" + another salt
const char kSecret2a[] = "$2a$04$u23E5UPjjNyYifBn8K8Dl.YeYYSrP8.Yd.AZ3dQzzhhaGPERqlxRC";
// htpasswd -nbBC 4 "" "$(printf 'a%.0s' $(seq 72))" | tr -d ':\n'   (72 bytes, bcrypt's limit)
const char kSeventyTwoA2y[] = "$2y$04$Y3hFTeL2V9X4Jkf1kRZBbODXRpxvjE54wOHGhawg8B2JEf6eJGE2q";

// One file per validation rule, its exact message on its first line: "# error: MESSAGE".
TEST(WebConfigTest, EveryInvalidFileGetsItsExactMessage) {
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(kWebDir)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("invalid-", 0) != 0) continue;
    std::ifstream in(entry.path());
    std::string first_line;
    std::getline(in, first_line);
    ASSERT_EQ(first_line.rfind("# error: ", 0), 0u) << name << " lacks its expected error";
    std::string expected = first_line.substr(9);
    expected.replace(expected.find("{file}"), 6, entry.path().string());
    auto config = LoadWebConfigFile(entry.path().string());
    ASSERT_FALSE(config.ok()) << name << " was accepted";
    EXPECT_EQ(config.error(), expected) << name;
    // Secrets of the fixtures (password hashes, a private key, a plain password) never show.
    for (const char* secret : {"IPRmZJ", "hunter2", "PRIVATE KEY", "NOTAREALKEY", "SecretHash"}) {
      EXPECT_EQ(config.error().find(secret), std::string::npos) << name << ": " << config.error();
    }
    ++checked;
  }
  EXPECT_GE(checked, 30);
}

// rate_limit as the toolkit reads it: Go durations, 0 turns it off.
TEST(WebConfigTest, RateLimitDecodesGoDurations) {
  auto limit = [](const std::string& interval, const std::string& burst) {
    auto config = ParseWebConfig(
        "rate_limit:\n  interval: " + interval + "\n  burst: " + burst + "\n", "web.yml");
    EXPECT_TRUE(config.ok()) << interval << ": " << config.error();
    return config.ok() ? config->rate_limit : std::nullopt;
  };
  using std::chrono::nanoseconds;
  EXPECT_EQ(limit("1s", "10")->interval, nanoseconds(1000000000));
  EXPECT_EQ(limit("1s", "10")->burst, 10u);
  EXPECT_EQ(limit("250ms", "1")->interval, nanoseconds(250000000));
  EXPECT_EQ(limit("1m30s", "1")->interval, nanoseconds(90000000000));
  EXPECT_EQ(limit("1.5s", "1")->interval, nanoseconds(1500000000));
  EXPECT_EQ(limit("\"100us\"", "1")->interval, nanoseconds(100000));
  EXPECT_FALSE(limit("0", "0").has_value());  // "set to 0 to disable"
  EXPECT_FALSE(limit("0s", "5").has_value());
  auto none = ParseWebConfig("rate_limit:\n", "web.yml");
  ASSERT_TRUE(none.ok()) << none.error();
  EXPECT_FALSE(none->rate_limit.has_value());
  auto longer = ParseWebConfig("rate_limit:\n  interval: 25h\n  burst: 1\n", "web.yml");
  ASSERT_FALSE(longer.ok());
  EXPECT_EQ(longer.error(), "web.yml:2:13: rate_limit.interval: \"25h\" is longer than 24h");
}

// The bucket: `burst` at once, then one per interval; Retry-After rounds up to whole seconds.
TEST(WebConfigTest, RateLimiterLetsABurstThenOnePerInterval) {
  using namespace std::chrono_literals;
  RateLimiter limiter(2s, 3);
  auto now = RateLimiter::Clock::now();
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(limiter.Take(now).has_value()) << i;
  auto wait = limiter.Take(now);
  ASSERT_TRUE(wait.has_value());
  EXPECT_EQ(*wait, 2s);
  EXPECT_EQ(limiter.Take(now + 1500ms), std::optional<std::chrono::seconds>(1s));
  EXPECT_FALSE(limiter.Take(now + 2s).has_value());  // one token back
  EXPECT_TRUE(limiter.Take(now + 2s).has_value());
  EXPECT_EQ(limiter.limited(), 3u);
  // Idle for long: full again, never more than the burst.
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(limiter.Take(now + 1h).has_value()) << i;
  EXPECT_TRUE(limiter.Take(now + 1h).has_value());
}

TEST(WebConfigTest, ValidFileDecodesEverySupportedKey) {
  // Parsed, not loaded: the certificate files it names do not exist here.
  std::string path = (kWebDir / "valid.yml").string();
  auto config = ParseWebConfig(schedwatch::testing::ReadFile(path), path);
  ASSERT_TRUE(config.ok()) << config.error();
  ASSERT_TRUE(config->tls.has_value());
  // Relative paths are relative to the web config's directory, absolute ones stay.
  EXPECT_EQ(config->tls->cert_file, (kWebDir / "tls/server.crt").string());
  EXPECT_EQ(config->tls->key_file, "/etc/schedwatch/server.key");
  EXPECT_EQ(config->tls->client_ca_file, (kWebDir / "tls/clients-ca.pem").string());
  EXPECT_EQ(config->tls->client_auth_type, "RequireAndVerifyClientCert");
  EXPECT_EQ(config->tls->min_version, "TLS13");
  EXPECT_EQ(config->tls->max_version, "TLS13");
  // In file order; the blank Content-Security-Policy is left unset.
  std::vector<std::pair<std::string, std::string>> headers{
      {"X-Frame-Options", "deny"},
      {"Strict-Transport-Security", "max-age=31536000"},
      {"X-Content-Type-Options", "nosniff"},
      {"X-XSS-Protection", "1; mode=block"}};
  EXPECT_EQ(config->headers, headers);
  std::map<std::string, std::string> users{{"prometheus", kCorrectHorse2y},
                                           {"grafana", kTroubador2y},
                                           {"ops", kSecret2b},
                                           {"legacy", kSecret2a}};
  EXPECT_EQ(config->basic_auth_users, users);
}

TEST(WebConfigTest, LoadingChecksTheNamedFilesAfterEverythingElse) {
  TempDir dir;
  fs::path web = dir.path() / "web.yml";
  std::string prefix = web.string() + ":";
  for (const char* name : {"server.crt", "server.key", "ca.pem"}) {
    WriteFile(dir.path() / name, "-----BEGIN CERTIFICATE-----\n");
  }
  std::string tls =
      "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
      "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.pem\n";
  WriteFile(web, tls);
  auto config = LoadWebConfigFile(web.string());
  ASSERT_TRUE(config.ok()) << config.error();
  EXPECT_EQ(config->tls->client_ca_file, (dir.path() / "ca.pem").string());

  fs::remove(dir.path() / "server.crt");
  EXPECT_EQ(LoadWebConfigFile(web.string()).error(),
            prefix + "2:14: tls_server_config.cert_file: cannot read " +
                (dir.path() / "server.crt").string() + ": No such file or directory");
  // Another problem further down the file is reported first: it is in the file itself.
  WriteFile(web, tls + "  max_version: TLS11\n");
  EXPECT_EQ(LoadWebConfigFile(web.string()).error(),
            prefix + "6:16: tls_server_config.max_version: TLS11 is lower than min_version TLS12");
  // Devices and FIFOs are refused without reading or waiting on them.
  WriteFile(dir.path() / "server.crt", "-----BEGIN CERTIFICATE-----\n");
  WriteFile(web, "tls_server_config:\n  cert_file: server.crt\n  key_file: /dev/zero\n");
  EXPECT_EQ(LoadWebConfigFile(web.string()).error(),
            prefix + "3:13: tls_server_config.key_file: /dev/zero: not a regular file");
  ASSERT_EQ(mkfifo((dir.path() / "fifo.pem").c_str(), 0600), 0);
  WriteFile(web, "tls_server_config:\n  cert_file: fifo.pem\n  key_file: server.key\n");
  EXPECT_EQ(LoadWebConfigFile(web.string()).error(),
            prefix + "2:14: tls_server_config.cert_file: " + (dir.path() / "fifo.pem").string() +
                ": not a regular file");
  WriteFile(web, "tls_server_config:\n  cert_file: server.crt\n  key_file: .\n");
  EXPECT_EQ(
      LoadWebConfigFile(web.string()).error(),
      prefix + "3:13: tls_server_config.key_file: " + dir.path().string() + "/.: is a directory");
}

TEST(WebConfigTest, DefaultsAndEmptySectionsMeanPlainHttpWithoutAuth) {
  for (const char* text : {"", "# nothing\n", "tls_server_config:\n", "tls_server_config: {}\n",
                           "http_server_config:\nbasic_auth_users:\n",
                           "http_server_config: {http2: false, headers: {}}\n"}) {
    auto config = ParseWebConfig(text, "web.yml");
    ASSERT_TRUE(config.ok()) << text << ": " << config.error();
    EXPECT_FALSE(config->tls.has_value()) << text;
    EXPECT_TRUE(config->basic_auth_users.empty()) << text;
    EXPECT_TRUE(config->headers.empty()) << text;
  }
  auto config =
      ParseWebConfig("tls_server_config: {cert_file: a.crt, key_file: a.key}\n", "web.yml");
  ASSERT_TRUE(config.ok()) << config.error();
  EXPECT_EQ(config->tls->cert_file, "a.crt");  // no directory in the name: relative to the cwd
  EXPECT_EQ(config->tls->client_auth_type, "NoClientCert");
  EXPECT_EQ(config->tls->min_version, "TLS12");
  EXPECT_EQ(config->tls->max_version, "");
}

TEST(WebConfigTest, ToolkitSpellingsAreAccepted) {
  // The toolkit's old name RequireClientCert, an empty client_auth_type, YAML 1.1 booleans.
  auto config = ParseWebConfig(
      "tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n"
      "  client_auth_type: RequireClientCert\n  client_ca_file: ca.pem\n"
      "http_server_config:\n  http2: no\n",
      "/etc/web.yml");
  ASSERT_TRUE(config.ok()) << config.error();
  EXPECT_EQ(config->tls->client_auth_type, "RequireAnyClientCert");
  EXPECT_EQ(config->tls->client_ca_file, "/etc/ca.pem");
  config = ParseWebConfig(
      "tls_server_config: {cert_file: a.crt, key_file: a.key, client_auth_type: ''}\n", "w.yml");
  ASSERT_TRUE(config.ok()) << config.error();
  EXPECT_EQ(config->tls->client_auth_type, "NoClientCert");
}

TEST(WebConfigTest, BcryptHashesOfEveryPrefixVerify) {
  EXPECT_TRUE(VerifyBasicAuthPassword(kCorrectHorse2y, "correct horse"));
  EXPECT_FALSE(VerifyBasicAuthPassword(kCorrectHorse2y, "correct horsE"));
  EXPECT_FALSE(VerifyBasicAuthPassword(kCorrectHorse2y, ""));
  EXPECT_TRUE(VerifyBasicAuthPassword(kTroubador2y, "tr0ub4dor&3"));
  EXPECT_FALSE(VerifyBasicAuthPassword(kTroubador2y, "tr0ub4dor&"));
  EXPECT_TRUE(VerifyBasicAuthPassword(kSecret2b, "s3cret"));
  EXPECT_FALSE(VerifyBasicAuthPassword(kSecret2b, "s3cret "));
  EXPECT_TRUE(VerifyBasicAuthPassword(kSecret2a, "s3cret"));
  EXPECT_FALSE(VerifyBasicAuthPassword(kSecret2a, "S3cret"));
}

TEST(WebConfigTest, BcryptRefusesWhatCouldMatchAPrefixOrAnotherScheme) {
  std::string seventy_two(72, 'a');
  EXPECT_TRUE(VerifyBasicAuthPassword(kSeventyTwoA2y, seventy_two));
  // bcrypt reads 72 bytes at most, so a longer password would match its prefix's hash.
  EXPECT_FALSE(VerifyBasicAuthPassword(kSeventyTwoA2y, seventy_two + "b"));
  // A C string ends at NUL: "s3cret\0anything" would otherwise verify as "s3cret".
  EXPECT_FALSE(VerifyBasicAuthPassword(kSecret2b, std::string("s3cret\0x", 8)));
  // A DES crypt of "x" (python3 crypt.crypt("x", "ab")) is not bcrypt: refused, not checked.
  EXPECT_FALSE(VerifyBasicAuthPassword("abiQ6Ep3EYTHc", "x"));
  EXPECT_FALSE(VerifyBasicAuthPassword("", ""));
  std::string changed = kSecret2b;
  changed.back() = changed.back() == 'G' ? 'H' : 'G';
  EXPECT_FALSE(VerifyBasicAuthPassword(changed, "s3cret"));
}

TEST(WebConfigTest, FifoIsRefusedWithoutWaitingForAWriter) {
  TempDir dir;
  std::string fifo = (dir.path() / "web.yml").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto result = std::async(std::launch::async, [&] { return LoadWebConfigFile(fifo); });
  if (result.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    int writer = open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // release the blocked reader
    if (writer >= 0) close(writer);
    FAIL() << "reading a FIFO blocked";
  }
  auto config = result.get();
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error(), fifo + ": not a regular file (a web config is read from a file)");
}

TEST(WebConfigTest, DevicesDirectoriesAndMissingFilesAreRefused) {
  EXPECT_EQ(LoadWebConfigFile("/dev/zero").error(),
            "/dev/zero: not a regular file (a web config is read from a file)");
  TempDir dir;
  EXPECT_EQ(LoadWebConfigFile(dir.path().string()).error(),
            dir.path().string() + ": is a directory, not a web config file");
  EXPECT_EQ(LoadWebConfigFile("/nonexistent/web.yml").error(),
            "/nonexistent/web.yml: cannot read the web config: No such file or directory");
}

TEST(WebConfigTest, FileOverOneMebibyteIsRefusedBeforeReading) {
  TempDir dir;
  fs::path path = dir.path() / "web.yml";
  WriteFile(path, std::string((1u << 20) + 1, '#'));
  EXPECT_EQ(LoadWebConfigFile(path.string()).error(),
            path.string() + ": the web config is 1048577 bytes, larger than the 1 MiB limit");
  WriteFile(path, std::string(1u << 20, '#'));  // exactly the limit: a comment, so no settings
  auto config = LoadWebConfigFile(path.string());
  ASSERT_TRUE(config.ok()) << config.error();
  EXPECT_FALSE(config->tls.has_value());
}

TEST(WebConfigTest, AliasBombIsRefusedQuickly) {
  // Nine levels of nine-fold aliases: 387 million strings if expanded. The tree shares aliased
  // nodes and the decoder stops at the first value of the wrong shape.
  std::string bomb = "basic_auth_users:\n  l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (int level = 1; level < 9; ++level) {
    std::string previous = "*l" + std::to_string(level - 1);
    bomb += "  l" + std::to_string(level) + ": &l" + std::to_string(level) + " [";
    for (int i = 0; i < 9; ++i) bomb += (i ? ", " : "") + previous;
    bomb += "]\n";
  }
  std::string headers = "http_server_config:\n  headers:\n    X-XSS-Protection: *l8\n";
  auto start = std::chrono::steady_clock::now();
  auto config = ParseWebConfig(bomb, "web.yml");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error(),
            "web.yml:2:7: basic_auth_users.l0: expected a single value, got a list");
  // The anchors defined first, under a key the toolkit does not know, used in a known place.
  config = ParseWebConfig("x-anchors:\n" + bomb.substr(bomb.find('\n') + 1) + headers, "web.yml");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().rfind("web.yml:1:1: x-anchors: unknown key", 0), 0u) << config.error();
  config = ParseWebConfig(headers.substr(0, headers.rfind("*l8")) + "&x [a, b]\n" + bomb, "w.yml");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error(),
            "w.yml:3:23: http_server_config.headers.X-XSS-Protection: expected a single value, got "
            "a list");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

TEST(WebConfigTest, BinaryAndNonUtf8InputIsAnErrorWithPosition) {
  auto config = ParseWebConfig("basic_auth_users:\n  caf\xe9: x\n", "web.yml");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error(), "web.yml:2:7: invalid trailing UTF-8 octet");
  config = ParseWebConfig(std::string("\x7f"
                                      "ELF\x02\x01\x01\0\0\0",
                                      10),
                          "web.yml");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().rfind("web.yml:1:1: ", 0), 0u) << config.error();
}

TEST(WebConfigTest, ScalarSecretsAreNeverQuotedInTypeErrors) {
  // A hash given where a mapping of users belongs, and a hash given as a user name's key.
  auto config = ParseWebConfig(std::string("basic_auth_users: ") + kTroubador2y + "\n", "w.yml");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error(), "w.yml:1:19: basic_auth_users: expected a mapping, got a single value");
  config =
      ParseWebConfig(std::string("basic_auth_users:\n  alice: ") + kTroubador2y + "x\n", "w.yml");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.error().find("FKy.9m"), std::string::npos) << config.error();
}

TEST(WebConfigTest, CipherSuitesBecomeGnutlsPriorities) {
  std::string text =
      "tls_server_config:\n  cert_file: s.crt\n  key_file: s.key\n"
      "  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, "
      "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA, TLS_AES_128_GCM_SHA256]\n"
      "  prefer_server_cipher_suites: false\n";
  auto config = ParseWebConfig(text, "/x/web.yml");
  ASSERT_TRUE(config.ok()) << config.error();
  EXPECT_EQ(
      config->tls->cipher_suites,
      (std::vector<std::string>{"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
                                "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "TLS_AES_128_GCM_SHA256"}));
  EXPECT_FALSE(config->tls->prefer_server_cipher_suites);
  auto priorities = TlsPriorities(*config->tls);
  ASSERT_TRUE(priorities.ok()) << priorities.error();
  EXPECT_EQ(*priorities,
            "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-KX-ALL:+ECDHE-RSA:-CIPHER-ALL:"
            "+AES-256-GCM:+AES-128-CBC:+AES-128-GCM:-MAC-ALL:+AEAD:+SHA1:-GROUP-ALL:+GROUP-X25519:"
            "+GROUP-SECP256R1:+GROUP-SECP384R1:+GROUP-SECP521R1");
}

TEST(WebConfigTest, WithoutCipherSuitesGoDefaultsAreOfferedInServerOrder) {
  auto config =
      ParseWebConfig("tls_server_config:\n  cert_file: s.crt\n  key_file: s.key\n", "/x/web.yml");
  ASSERT_TRUE(config.ok()) << config.error();
  auto priorities = TlsPriorities(*config->tls);
  ASSERT_TRUE(priorities.ok()) << priorities.error();
  // ECDHE with AEAD ciphers only, TLS 1.2 and 1.3, the server's order: no static RSA, DHE,
  // CBC or CCM.
  EXPECT_EQ(*priorities,
            "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:"
            "-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305:-MAC-ALL:+AEAD:-GROUP-ALL:"
            "+GROUP-X25519:+GROUP-SECP256R1:+GROUP-SECP384R1:+GROUP-SECP521R1:%SERVER_PRECEDENCE");
}

}  // namespace
}  // namespace schedwatch
