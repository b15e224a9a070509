#include "exporter/http/web_config.h"

#include <crypt.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "schedwatch/yaml_tree.h"

namespace schedwatch {
namespace {

constexpr std::size_t kMaxWebConfigBytes = 1u << 20;

// Thrown inside the decoder only; ParseWebConfig turns it into an Error.
struct WebConfigProblem {
  std::string message;
};

constexpr std::array<std::string_view, 5> kClientAuthTypes = {
    "NoClientCert", "RequestClientCert", "RequireAnyClientCert", "VerifyClientCertIfGiven",
    "RequireAndVerifyClientCert"};
constexpr std::array<std::string_view, 4> kTlsVersions = {"TLS10", "TLS11", "TLS12", "TLS13"};

// The response headers exporter-toolkit lets a web config set, with their allowed values (empty:
// any value). It keeps the list short on purpose, for consistency across Prometheus servers.
struct AllowedHeader {
  std::string_view name;
  std::vector<std::string_view> values;
};
const std::vector<AllowedHeader>& AllowedHeaders() {
  static const auto* headers = new std::vector<AllowedHeader>{
      {"Content-Security-Policy", {}},
      {"Strict-Transport-Security", {}},
      {"X-Content-Type-Options", {"nosniff"}},
      {"X-Frame-Options", {"deny", "sameorigin"}},
      {"X-XSS-Protection", {}},
  };
  return *headers;
}

// Keys exporter-toolkit accepts that schedwatch does not apply: refused with the reason.
struct Unsupported {
  std::string_view key;
  std::string_view why;
};
constexpr std::array<Unsupported, 0> kUnsupportedTop = {};
// Bounds that keep burst × interval within the clock's range.
constexpr std::int64_t kMaxRateInterval = 24 * 3600 * 1000000000LL;
constexpr std::int64_t kMaxBurst = 100000;
constexpr std::array<Unsupported, 5> kUnsupportedTls = {{
    {"cert", "not supported by schedwatch: put the certificate in a file named by cert_file"},
    {"key", "not supported by schedwatch: put the key in a file named by key_file"},
    {"client_ca",
     "not supported by schedwatch: put the CA certificates in a file named by client_ca_file"},
    {"curve_preferences",
     "not supported by schedwatch (GnuTLS's default groups are used); remove the key"},
    {"client_allowed_sans",
     "not supported by schedwatch (client certificates are checked against client_ca_file "
     "only); remove the key"},
}};

template <typename Names>
std::string Join(const Names& names, std::string_view separator = ", ") {
  std::string out;
  for (const auto& name : names) {
    if (!out.empty()) out += separator;
    out += name;
  }
  return out;
}

std::string FieldPath(const std::string& parent, std::string_view key) {
  return parent.empty() ? std::string(key) : parent + "." + std::string(key);
}

// $2a$, $2b$ or $2y$, a two-digit cost from 04 to 31, '$', then 22 characters of salt and 31 of
// hash in bcrypt's base64 alphabet: what htpasswd -B and libxcrypt write.
bool IsBcryptHash(std::string_view hash) {
  if (hash.size() != 60 || hash.substr(0, 2) != "$2") return false;
  if (hash[2] != 'a' && hash[2] != 'b' && hash[2] != 'y') return false;
  if (hash[3] != '$' || hash[6] != '$') return false;
  if (hash[4] < '0' || hash[4] > '9' || hash[5] < '0' || hash[5] > '9') return false;
  int cost = (hash[4] - '0') * 10 + (hash[5] - '0');
  if (cost < 4 || cost > 31) return false;
  return std::all_of(hash.begin() + 7, hash.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '/';
  });
}

// A file opened for reading without blocking on a FIFO (O_NONBLOCK), kept open only when it is a
// regular file of at most kMaxWebConfigBytes.
struct SmallFile {
  enum class Problem { kNone, kCannotOpen, kDirectory, kNotRegular, kTooLarge };
  explicit SmallFile(const std::string& path) {
    fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    struct stat info {};
    if (fd < 0 || fstat(fd, &info) != 0) {
      problem = Problem::kCannotOpen;
      why = std::strerror(errno);
    } else if (S_ISDIR(info.st_mode)) {
      problem = Problem::kDirectory;
      why = "is a directory";
    } else if (!S_ISREG(info.st_mode)) {
      problem = Problem::kNotRegular;
      why = "not a regular file";
    } else if (static_cast<std::uint64_t>(info.st_size) > kMaxWebConfigBytes) {
      problem = Problem::kTooLarge;
      why = fmt::format("{} bytes, larger than the {} MiB limit", info.st_size,
                        kMaxWebConfigBytes >> 20);
    }
  }
  ~SmallFile() {
    if (fd >= 0) close(fd);
  }
  SmallFile(const SmallFile&) = delete;
  SmallFile& operator=(const SmallFile&) = delete;

  int fd = -1;
  Problem problem = Problem::kNone;
  std::string why;
};

class Decoder {
 public:
  // `check_files`: also check that the files the config names can be read (not for pure parsing).
  Decoder(std::string file, bool check_files) : file_(std::move(file)), check_files_(check_files) {
    auto slash = file_.rfind('/');
    directory_ = slash == std::string::npos ? "" : file_.substr(0, slash + 1);
  }

  WebConfig Decode(YamlNode root) {
    WebConfig config;
    if (root.IsNull()) return config;  // an empty file: plain HTTP, no auth (as the toolkit)
    Expect(root, YamlNode::Kind::kMapping, "", false);
    CheckKeys(root, "",
              {"tls_server_config", "http_server_config", "basic_auth_users", "rate_limit"},
              kUnsupportedTop);
    for (std::size_t i = 0; i < root.size(); ++i) {
      std::string_view key = root.key(i).scalar();
      YamlNode value = root.value(i);
      if (key == "tls_server_config") config.tls = DecodeTls(value, std::string(key));
      if (key == "http_server_config") config.headers = DecodeHttp(value, std::string(key));
      if (key == "basic_auth_users") {
        config.basic_auth_users = DecodeUsers(value, std::string(key));
      }
      if (key == "rate_limit") config.rate_limit = DecodeRateLimit(value, std::string(key));
    }
    // Last, so that every other problem is reported with the file's own position first.
    for (const auto& named : files_) {
      SmallFile file(named.path);
      if (file.problem == SmallFile::Problem::kCannotOpen) {
        Fail(named.node, named.field, fmt::format("cannot read {}: {}", named.path, file.why));
      }
      if (file.problem != SmallFile::Problem::kNone) {
        Fail(named.node, named.field, fmt::format("{}: {}", named.path, file.why));
      }
    }
    return config;
  }

 private:
  [[noreturn]] void Fail(YamlNode node, const std::string& field, const std::string& why) {
    throw WebConfigProblem{fmt::format("{}:{}:{}: {}{}{}", file_, node.line(), node.column(), field,
                                       field.empty() ? "" : ": ", why)};
  }

  // `secret`: the node may hold a password hash, so its text is never quoted.
  void Expect(YamlNode node, YamlNode::Kind kind, const std::string& field, bool secret) {
    if (node.kind() == kind) return;
    const char* wanted = kind == YamlNode::Kind::kMapping    ? "a mapping"
                         : kind == YamlNode::Kind::kSequence ? "a list"
                                                             : "a single value";
    std::string got = secret && node.IsScalar() ? "a single value" : node.Describe();
    Fail(node, field, fmt::format("expected {}, got {}", wanted, got));
  }

  // Unknown, duplicate and unsupported keys of one mapping, checked before any value is read.
  template <std::size_t N>
  void CheckKeys(YamlNode node, const std::string& path,
                 std::initializer_list<std::string_view> known,
                 const std::array<Unsupported, N>& unsupported) {
    for (std::size_t i = 0; i < node.size(); ++i) {
      YamlNode key = node.key(i);
      Expect(key, YamlNode::Kind::kScalar, path, false);
      std::string_view name = key.scalar();
      for (std::size_t j = 0; j < i; ++j) {
        if (node.key(j).scalar() == name) Fail(key, FieldPath(path, name), "duplicate key");
      }
      if (std::find(known.begin(), known.end(), name) != known.end()) continue;
      for (const auto& entry : unsupported) {
        if (entry.key == name) {
          Fail(key, FieldPath(path, name), std::string(entry.why));
        }
      }
      Fail(key, FieldPath(path, name), fmt::format("unknown key (known keys: {})", Join(known)));
    }
  }

  // A string as the toolkit's YAML library reads it into a string field: null is "".
  std::string String(YamlNode node, const std::string& field) {
    if (node.IsNull()) return "";
    Expect(node, YamlNode::Kind::kScalar, field, false);
    return std::string(node.scalar());
  }

  // A boolean as YAML 1.1 (the toolkit's go-yaml v2) spells it, unquoted.
  bool Bool(YamlNode node, const std::string& field) {
    static constexpr std::array<std::string_view, 11> kTrue = {
        "true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON", "y", "Y"};
    static constexpr std::array<std::string_view, 11> kFalse = {
        "false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF", "n", "N"};
    if (node.IsScalar() && node.plain()) {
      auto text = node.scalar();
      if (std::find(kTrue.begin(), kTrue.end(), text) != kTrue.end()) return true;
      if (std::find(kFalse.begin(), kFalse.end(), text) != kFalse.end()) return false;
    }
    Fail(node, field, fmt::format("expected true or false, got {}", node.Describe()));
  }

  std::string ResolvePath(const std::string& path) const {
    if (path.empty() || path[0] == '/') return path;
    return directory_ + path;
  }

  std::string FileName(YamlNode node, const std::string& field) {
    std::string name = String(node, field);
    if (name.empty()) Fail(node, field, "empty; expected a file name");
    std::string path = ResolvePath(name);
    if (check_files_) files_.push_back({node, field, path});
    return path;
  }

  std::string TlsVersion(YamlNode node, const std::string& field) {
    std::string version = String(node, field);
    if (std::find(kTlsVersions.begin(), kTlsVersions.end(), version) == kTlsVersions.end()) {
      Fail(node, field,
           fmt::format("unknown TLS version \"{}\" (one of {})", version, Join(kTlsVersions)));
    }
    return version;
  }

  // exporter-toolkit's names (Go's); the insecure ones Go offers only on request are refused.
  std::vector<std::string> CipherSuites(YamlNode node, const std::string& field) {
    std::vector<std::string> names;
    if (node.IsNull()) return names;
    Expect(node, YamlNode::Kind::kSequence, field, false);
    for (std::size_t i = 0; i < node.size(); ++i) {
      std::string name = String(node.item(i), field);
      if (FindCipherSuite(name) == nullptr) {
        bool insecure = name.find("RC4") != std::string::npos ||
                        name.find("3DES") != std::string::npos ||
                        name.find("CBC_SHA256") != std::string::npos;
        Fail(node.item(i), field,
             insecure ? fmt::format("{} is not offered by schedwatch (insecure)", name)
                      : fmt::format("unknown cipher suite \"{}\" (Go's names, e.g. "
                                    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)",
                                    name));
      }
      names.push_back(std::move(name));
    }
    return names;
  }

  std::optional<WebConfig::Tls> DecodeTls(YamlNode node, const std::string& path) {
    // Left empty, as templates often do, it means no TLS (as the toolkit reads it).
    if (node.IsNull() || (node.IsMapping() && node.size() == 0)) return std::nullopt;
    Expect(node, YamlNode::Kind::kMapping, path, false);
    CheckKeys(node, path,
              {"cert_file", "key_file", "client_auth_type", "client_ca_file", "min_version",
               "max_version", "cipher_suites", "prefer_server_cipher_suites"},
              kUnsupportedTls);
    WebConfig::Tls tls;
    std::optional<YamlNode> cert, key, auth, ca, min, max;
    for (std::size_t i = 0; i < node.size(); ++i) {
      std::string_view name = node.key(i).scalar();
      YamlNode value = node.value(i);
      std::string field = FieldPath(path, name);
      if (name == "cert_file") {
        tls.cert_file = FileName(value, field);
        cert = value;
      } else if (name == "key_file") {
        tls.key_file = FileName(value, field);
        key = value;
      } else if (name == "client_ca_file") {
        tls.client_ca_file = FileName(value, field);
        ca = value;
      } else if (name == "client_auth_type") {
        auth = value;
        std::string type = String(value, field);
        if (type.empty()) type = "NoClientCert";
        if (type == "RequireClientCert") type = "RequireAnyClientCert";  // toolkit's old name
        if (std::find(kClientAuthTypes.begin(), kClientAuthTypes.end(), type) ==
            kClientAuthTypes.end()) {
          Fail(value, field,
               fmt::format("unknown client_auth_type \"{}\" (one of {})", type,
                           Join(kClientAuthTypes)));
        }
        tls.client_auth_type = type;
      } else if (name == "min_version") {
        tls.min_version = TlsVersion(value, field);
        min = value;
      } else if (name == "max_version") {
        tls.max_version = TlsVersion(value, field);
        max = value;
      } else if (name == "cipher_suites") {
        tls.cipher_suites = CipherSuites(value, field);
      } else if (name == "prefer_server_cipher_suites") {
        tls.prefer_server_cipher_suites = Bool(value, field);
      }
    }
    if (!cert) Fail(node, FieldPath(path, "cert_file"), "missing required key");
    if (!key) Fail(node, FieldPath(path, "key_file"), "missing required key");
    bool verify = tls.client_auth_type == "VerifyClientCertIfGiven" ||
                  tls.client_auth_type == "RequireAndVerifyClientCert";
    if (verify && !ca) {
      Fail(*auth, FieldPath(path, "client_ca_file"),
           fmt::format("required when client_auth_type is {}", tls.client_auth_type));
    }
    if (ca && tls.client_auth_type == "NoClientCert") {
      Fail(*ca, FieldPath(path, "client_ca_file"),
           "set without a client_auth_type that asks for client certificates (e.g. "
           "RequireAndVerifyClientCert)");
    }
    // The names sort in version order.
    if (max && tls.max_version < tls.min_version) {
      Fail(*max, FieldPath(path, "max_version"),
           fmt::format("{} is lower than min_version {}", tls.max_version, tls.min_version));
    }
    return tls;
  }

  std::vector<std::pair<std::string, std::string>> DecodeHttp(YamlNode node,
                                                              const std::string& path) {
    std::vector<std::pair<std::string, std::string>> headers;
    if (node.IsNull()) return headers;
    Expect(node, YamlNode::Kind::kMapping, path, false);
    CheckKeys(node, path, {"http2", "headers"}, std::array<Unsupported, 0>{});
    for (std::size_t i = 0; i < node.size(); ++i) {
      std::string_view name = node.key(i).scalar();
      YamlNode value = node.value(i);
      std::string field = FieldPath(path, name);
      if (name == "http2" && Bool(value, field)) {
        Fail(value, field,
             "HTTP/2 is not supported by schedwatch (it serves HTTP/1.1); remove the key or set it "
             "to false");
      }
      if (name == "headers") headers = DecodeHeaders(value, field);
    }
    return headers;
  }

  std::vector<std::pair<std::string, std::string>> DecodeHeaders(YamlNode node,
                                                                 const std::string& path) {
    std::vector<std::pair<std::string, std::string>> headers;
    if (node.IsNull()) return headers;
    Expect(node, YamlNode::Kind::kMapping, path, false);
    std::vector<std::string_view> allowed_names;
    for (const auto& header : AllowedHeaders()) allowed_names.push_back(header.name);
    for (std::size_t i = 0; i < node.size(); ++i) {
      YamlNode key = node.key(i);
      Expect(key, YamlNode::Kind::kScalar, path, false);
      std::string name(key.scalar());
      std::string field = FieldPath(path, name);
      for (std::size_t j = 0; j < i; ++j) {
        if (node.key(j).scalar() == name) Fail(key, field, "duplicate key");
      }
      auto allowed = std::find_if(AllowedHeaders().begin(), AllowedHeaders().end(),
                                  [&](const AllowedHeader& header) { return header.name == name; });
      if (allowed == AllowedHeaders().end()) {
        Fail(key, field,
             fmt::format("this header cannot be configured (allowed: {})", Join(allowed_names)));
      }
      YamlNode value_node = node.value(i);
      std::string value = String(value_node, field);
      if (!allowed->values.empty() && std::find(allowed->values.begin(), allowed->values.end(),
                                                value) == allowed->values.end()) {
        Fail(value_node, field,
             fmt::format("expected {}, got \"{}\"", Join(allowed->values, " or "), value));
      }
      if (std::any_of(value.begin(), value.end(), [](char c) {
            return (static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f;
          })) {
        Fail(value_node, field, "the value contains a control character such as a line break");
      }
      if (value.empty()) continue;  // "unset if blank"
      headers.emplace_back(std::move(name), std::move(value));
    }
    return headers;
  }

  std::map<std::string, std::string> DecodeUsers(YamlNode node, const std::string& path) {
    std::map<std::string, std::string> users;
    if (node.IsNull()) return users;
    Expect(node, YamlNode::Kind::kMapping, path, true);
    for (std::size_t i = 0; i < node.size(); ++i) {
      YamlNode key = node.key(i);
      Expect(key, YamlNode::Kind::kScalar, path, true);
      std::string user(key.scalar());
      std::string field = FieldPath(path, user);
      if (users.count(user)) Fail(key, field, "duplicate user");
      YamlNode value = node.value(i);
      Expect(value, YamlNode::Kind::kScalar, field, true);
      std::string hash(value.scalar());
      if (!IsBcryptHash(hash)) {
        Fail(value, field,
             "not a bcrypt hash ($2a$, $2b$ or $2y$, a cost from 04 to 31, then 53 characters; "
             "make one with htpasswd -nBC 10 \"\" | tr -d ':\\n')");
      }
      users.emplace(std::move(user), std::move(hash));
    }
    return users;
  }

  // A Go duration as the toolkit's YAML library reads one into time.Duration: "1s", "250ms",
  // "1m30s", "1.5s" (units ns, us, µs, ms, s, m, h); a bare 0 is zero.
  std::chrono::nanoseconds GoDuration(YamlNode node, const std::string& field) {
    Expect(node, YamlNode::Kind::kScalar, field, false);
    std::string text(node.scalar());
    auto bad = [&](const std::string& why) {
      Fail(node, field, fmt::format("\"{}\" {}", text, why));
    };
    if (text == "0") return std::chrono::nanoseconds(0);
    if (text.empty()) bad("is not a duration (e.g. 1s, 250ms, 1m30s)");
    if (text[0] == '-') bad("is negative");
    static const std::array<std::pair<std::string_view, double>, 8> kUnits = {{{"ns", 1},
                                                                               {"us", 1e3},
                                                                               {"\xc2\xb5s", 1e3},
                                                                               {"\xce\xbcs", 1e3},
                                                                               {"ms", 1e6},
                                                                               {"s", 1e9},
                                                                               {"m", 60e9},
                                                                               {"h", 3600e9}}};
    double total = 0;
    std::size_t at = text[0] == '+' ? 1 : 0;
    if (at == text.size()) bad("is not a duration (e.g. 1s, 250ms, 1m30s)");
    while (at < text.size()) {
      std::size_t start = at;
      while (at < text.size() &&
             (std::isdigit(static_cast<unsigned char>(text[at])) || text[at] == '.')) {
        ++at;
      }
      std::string number = text.substr(start, at - start);
      std::size_t unit_start = at;
      while (at < text.size() && !std::isdigit(static_cast<unsigned char>(text[at])) &&
             text[at] != '.') {
        ++at;
      }
      std::string unit = text.substr(unit_start, at - unit_start);
      auto found = std::find_if(kUnits.begin(), kUnits.end(),
                                [&](const auto& known) { return known.first == unit; });
      if (number.empty() || number == "." || std::count(number.begin(), number.end(), '.') > 1 ||
          found == kUnits.end()) {
        bad(unit.empty() ? "has no unit (e.g. 1s, 250ms, 1m30s)"
                         : "is not a duration (units ns, us, ms, s, m, h; e.g. 1s, 1m30s)");
      }
      total += std::strtod(number.c_str(), nullptr) * found->second;
      if (total > static_cast<double>(kMaxRateInterval)) bad("is longer than 24h");
    }
    return std::chrono::nanoseconds(static_cast<std::int64_t>(total));
  }

  std::optional<WebConfig::RateLimit> DecodeRateLimit(YamlNode node, const std::string& path) {
    if (node.IsNull()) return std::nullopt;
    Expect(node, YamlNode::Kind::kMapping, path, false);
    CheckKeys(node, path, {"interval", "burst"}, std::array<Unsupported, 0>{});
    WebConfig::RateLimit limit;
    std::optional<YamlNode> burst;
    for (std::size_t i = 0; i < node.size(); ++i) {
      std::string_view name = node.key(i).scalar();
      YamlNode value = node.value(i);
      std::string field = FieldPath(path, name);
      if (name == "interval") limit.interval = GoDuration(value, field);
      if (name == "burst") {
        burst = value;
        std::string text = value.IsScalar() && value.plain() ? std::string(value.scalar()) : "";
        if (text.empty() || text.size() > 7 ||
            text.find_first_not_of("0123456789") != std::string::npos ||
            std::stoll(text) > kMaxBurst) {
          Fail(value, field,
               fmt::format("expected a whole number from 0 to {}, got {}", kMaxBurst,
                           value.IsScalar() ? "\"" + std::string(value.scalar()) + "\""
                                            : value.Describe()));
        }
        limit.burst = static_cast<unsigned>(std::stoll(text));
      }
    }
    if (limit.interval.count() == 0) return std::nullopt;  // "set to 0 to disable"
    if (limit.burst == 0) {
      Fail(burst ? *burst : node, FieldPath(path, "burst"),
           "must be at least 1 when interval is set (a bucket of 0 refuses every request)");
    }
    return limit;
  }

  struct NamedFile {
    YamlNode node;
    std::string field, path;
  };
  std::string file_;
  std::string directory_;
  bool check_files_;
  std::vector<NamedFile> files_;
};

Result<WebConfig> Parse(std::string_view yaml_text, const std::string& file_name,
                        bool check_files) {
  auto document = YamlDocument::Parse(yaml_text);
  if (!document) return Error{fmt::format("{}:{}", file_name, document.error())};
  try {
    return Decoder(file_name, check_files).Decode(document->root());
  } catch (const WebConfigProblem& problem) {
    return Error{problem.message};
  }
}

}  // namespace

Result<WebConfig> ParseWebConfig(std::string_view yaml_text, const std::string& file_name) {
  return Parse(yaml_text, file_name, false);
}

Result<WebConfig> LoadWebConfigFile(const std::string& path) {
  SmallFile file(path);
  switch (file.problem) {
    case SmallFile::Problem::kNone:
      break;
    case SmallFile::Problem::kCannotOpen:
      return Error{fmt::format("{}: cannot read the web config: {}", path, file.why)};
    case SmallFile::Problem::kDirectory:
      return Error{fmt::format("{}: is a directory, not a web config file", path)};
    case SmallFile::Problem::kNotRegular:  // a FIFO or a device: never waited on or read
      return Error{fmt::format("{}: not a regular file (a web config is read from a file)", path)};
    case SmallFile::Problem::kTooLarge:
      return Error{fmt::format("{}: the web config is {}", path, file.why)};
  }
  // Read at most one byte past the limit: a file growing while it is read is caught too.
  std::string text(kMaxWebConfigBytes + 1, '\0');
  std::size_t size = 0;
  while (size < text.size()) {
    ssize_t n = read(file.fd, text.data() + size, text.size() - size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return Error{fmt::format("{}: cannot read the web config: {}", path, std::strerror(errno))};
    }
    if (n == 0) break;
    size += static_cast<std::size_t>(n);
  }
  if (size > kMaxWebConfigBytes) {
    return Error{fmt::format("{}: the web config is larger than the {} MiB limit", path,
                             kMaxWebConfigBytes >> 20)};
  }
  text.resize(size);
  return Parse(text, path, true);
}

const CipherSuite* FindCipherSuite(std::string_view name) {
  static constexpr std::array<CipherSuite, 19> kSuites = {{
      {"TLS_RSA_WITH_AES_128_CBC_SHA", "RSA", "AES-128-CBC", "SHA1"},
      {"TLS_RSA_WITH_AES_256_CBC_SHA", "RSA", "AES-256-CBC", "SHA1"},
      {"TLS_RSA_WITH_AES_128_GCM_SHA256", "RSA", "AES-128-GCM", "AEAD"},
      {"TLS_RSA_WITH_AES_256_GCM_SHA384", "RSA", "AES-256-GCM", "AEAD"},
      {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", "ECDHE-ECDSA", "AES-128-CBC", "SHA1"},
      {"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "ECDHE-ECDSA", "AES-256-CBC", "SHA1"},
      {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "ECDHE-RSA", "AES-128-CBC", "SHA1"},
      {"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "ECDHE-RSA", "AES-256-CBC", "SHA1"},
      {"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "ECDHE-ECDSA", "AES-128-GCM", "AEAD"},
      {"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ECDHE-RSA", "AES-128-GCM", "AEAD"},
      {"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "ECDHE-ECDSA", "AES-256-GCM", "AEAD"},
      {"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "ECDHE-RSA", "AES-256-GCM", "AEAD"},
      {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-RSA", "CHACHA20-POLY1305", "AEAD"},
      {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-ECDSA", "CHACHA20-POLY1305", "AEAD"},
      {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305", "ECDHE-RSA", "CHACHA20-POLY1305", "AEAD"},
      {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305", "ECDHE-ECDSA", "CHACHA20-POLY1305", "AEAD"},
      {"TLS_AES_128_GCM_SHA256", "", "AES-128-GCM", "AEAD"},
      {"TLS_AES_256_GCM_SHA384", "", "AES-256-GCM", "AEAD"},
      {"TLS_CHACHA20_POLY1305_SHA256", "", "CHACHA20-POLY1305", "AEAD"},
  }};
  for (const auto& suite : kSuites) {
    if (suite.name == name) return &suite;
  }
  return nullptr;
}

bool VerifyBasicAuthPassword(const std::string& bcrypt_hash, const std::string& password) {
  // Only bcrypt: crypt_r would also accept DES or MD5 settings. bcrypt reads at most 72 bytes and
  // a C string stops at NUL, so longer passwords or embedded NULs could match a prefix: refused
  // (Go's bcrypt, used by the toolkit, refuses more than 72 bytes too).
  if (!IsBcryptHash(bcrypt_hash) || password.size() > 72 ||
      password.find('\0') != std::string::npos) {
    return false;
  }
  auto data = std::make_unique<crypt_data>();  // about 32 KiB: not on the stack
  const char* result = crypt_r(password.c_str(), bcrypt_hash.c_str(), data.get());
  if (result == nullptr || std::strlen(result) != bcrypt_hash.size()) return false;
  // Constant time in the content: every byte is compared whatever the first difference.
  unsigned char difference = 0;
  for (std::size_t i = 0; i < bcrypt_hash.size(); ++i) {
    difference |= static_cast<unsigned char>(result[i] ^ bcrypt_hash[i]);
  }
  return difference == 0;
}

}  // namespace schedwatch
