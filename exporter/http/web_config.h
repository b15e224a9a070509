// --web.config.file: the Prometheus exporter-toolkit web configuration (TLS, basic auth,
// response headers), so a file written for node_exporter or Prometheus works here unchanged.
// Keys the toolkit knows but schedwatch does not apply are refused by name, never ignored.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schedwatch/result.h"

namespace schedwatch {

struct WebConfig {
  struct Tls {
    std::string cert_file, key_file;  // PEM; relative paths are resolved against the file's dir
    // NoClientCert, RequestClientCert, RequireAnyClientCert, VerifyClientCertIfGiven or
    // RequireAndVerifyClientCert (the toolkit's old spelling RequireClientCert is normalised).
    std::string client_auth_type = "NoClientCert";
    std::string client_ca_file;         // PEM bundle; set whenever a Verify* type is
    std::string min_version = "TLS12";  // TLS10, TLS11, TLS12 or TLS13
    std::string max_version;            // empty: no maximum
    // Go names (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, ...), in order; empty: Go's defaults,
    // ECDHE with AEAD ciphers only.
    std::vector<std::string> cipher_suites;
    bool prefer_server_cipher_suites = true;
  };
  std::optional<Tls> tls;                                    // absent: plain HTTP
  std::map<std::string, std::string> basic_auth_users;       // user -> bcrypt hash
  std::vector<std::pair<std::string, std::string>> headers;  // http_server_config.headers
  // rate_limit: a token bucket of `burst` tokens, one more every `interval`; absent when the
  // key is, or its interval is 0 (as the toolkit reads it).
  struct RateLimit {
    std::chrono::nanoseconds interval{0};
    unsigned burst = 0;
  };
  std::optional<RateLimit> rate_limit;
};

// A cipher suite by its Go name, as GnuTLS priority names: key exchange, cipher, MAC (AEAD for
// the GCM and ChaCha20 suites; an empty key exchange for the TLS 1.3 suites). nullptr when
// unknown or not offered (RC4, 3DES, CBC with SHA-256).
struct CipherSuite {
  std::string_view name, key_exchange, cipher, mac;
};
const CipherSuite* FindCipherSuite(std::string_view name);

// Decodes the file's text strictly (unknown keys, wrong types and bad values are errors);
// errors read "file:line:col: field: why" and never quote a password hash. Pure: no file access.
Result<WebConfig> ParseWebConfig(std::string_view yaml_text, const std::string& file_name);

// Reads a regular file of at most 1 MiB (a FIFO or device is refused without blocking), parses
// it, then checks that the certificate, key and CA files it names are readable regular files of
// at most 1 MiB (errors point at their key's position).
Result<WebConfig> LoadWebConfigFile(const std::string& path);

// True when `password` matches the bcrypt ($2a$, $2b$, $2y$) hash; crypt_r, constant-time compare.
bool VerifyBasicAuthPassword(const std::string& bcrypt_hash, const std::string& password);

}  // namespace schedwatch
