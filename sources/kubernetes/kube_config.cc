#include "sources/kubernetes/kube_config.h"

#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "schedwatch/platform/file.h"
#include "schedwatch/yaml_tree.h"

namespace schedwatch::kubernetes {
namespace {

constexpr std::size_t kMaxKubeconfigBytes = 4u << 20;
constexpr std::size_t kMaxTokenBytes = 64u << 10;

// The kind of a node, never its value: kubeconfig values can be credentials.
std::string KindOf(YamlNode node) {
  switch (node.kind()) {
    case YamlNode::Kind::kNull:
      return "nothing";
    case YamlNode::Kind::kScalar:
      return "a value";
    case YamlNode::Kind::kSequence:
      return "a list";
    case YamlNode::Kind::kMapping:
      return "a mapping";
  }
  return "something else";
}

std::optional<YamlNode> Find(YamlNode mapping, std::string_view key) {
  if (!mapping.IsMapping()) return std::nullopt;
  for (std::size_t i = 0; i < mapping.size(); ++i) {
    if (mapping.key(i).IsScalar() && mapping.key(i).scalar() == key) return mapping.value(i);
  }
  return std::nullopt;
}

// Reads one kubeconfig, remembering the first problem with its position and field path.
class Reader {
 public:
  explicit Reader(const std::string& path) : path_(path) {
    auto slash = path.rfind('/');
    directory_ = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  }

  bool failed() const { return !error_.empty(); }
  Error error() const { return Error{error_}; }

  void Fail(YamlNode node, const std::string& field, const std::string& what) {
    if (error_.empty()) {
      error_ = fmt::format("kubeconfig {}:{}:{}: {}: {}", path_, node.line(), node.column(), field,
                           what);
    }
  }
  void Fail(const std::string& what) {
    if (error_.empty()) error_ = fmt::format("kubeconfig {}: {}", path_, what);
  }

  // A string field; "" when absent or null.
  std::string Text(YamlNode mapping, std::string_view key, const std::string& field) {
    auto value = Find(mapping, key);
    if (!value || value->IsNull()) return {};
    if (!value->IsScalar()) {
      Fail(*value, field + "." + std::string(key), "expected a string, got " + KindOf(*value));
      return {};
    }
    return std::string(value->scalar());
  }

  bool Flag(YamlNode mapping, std::string_view key, const std::string& field) {
    std::string text = Text(mapping, key, field);
    if (text.empty() || text == "false") return false;
    if (text == "true") return true;
    Fail(*Find(mapping, key), field + "." + std::string(key), "expected true or false");
    return false;
  }

  std::string PathField(YamlNode mapping, std::string_view key, const std::string& field) {
    std::string path = ExpandHome(Text(mapping, key, field), std::getenv("HOME"));
    if (path.empty() || path[0] == '/') return path;
    return directory_ + path;
  }

  std::string Base64Field(YamlNode mapping, std::string_view key, const std::string& field) {
    std::string text = Text(mapping, key, field);
    if (text.empty()) return {};
    auto decoded = DecodeBase64(text);
    if (!decoded) {
      Fail(*Find(mapping, key), field + "." + std::string(key), "not valid base64");
      return {};
    }
    return *decoded;
  }

  // The `kind` mapping of the entry named `name` in the top-level list `list`
  // (contexts[].context, clusters[].cluster, users[].user).
  std::optional<YamlNode> Entry(YamlNode root, const char* list, const char* kind,
                                const std::string& name) {
    auto entries = Find(root, list);
    std::vector<std::string> names;
    if (entries && entries->IsSequence()) {
      for (std::size_t i = 0; i < entries->size(); ++i) {
        YamlNode entry = entries->item(i);
        auto entry_name = Find(entry, "name");
        if (!entry_name || !entry_name->IsScalar()) continue;
        if (entry_name->scalar() != name) {
          names.emplace_back(entry_name->scalar());
          continue;
        }
        auto body = Find(entry, kind);
        // An entry without settings: looking fields up in the entry itself finds none.
        if (!body || body->IsNull()) return entry;
        if (!body->IsMapping()) {
          Fail(*body, fmt::format("{}[\"{}\"].{}", list, name, kind),
               "expected a mapping, got " + KindOf(*body));
          return std::nullopt;
        }
        return body;
      }
    } else if (entries && !entries->IsNull()) {
      Fail(*entries, list, "expected a list, got " + KindOf(*entries));
      return std::nullopt;
    }
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    Fail(fmt::format("{} \"{}\" not found ({})", std::string(kind), name,
                     known.empty() ? "there are none" : "there are " + known));
    return std::nullopt;
  }

 private:
  std::string path_;
  std::string directory_;
  std::string error_;
};

Result<std::string> ReadFile(const std::string& path, std::size_t max_bytes) {
  return platform::ReadRegularFile(path, max_bytes);  // a kubeconfig or token is a small file
}

}  // namespace

Result<std::string> DecodeBase64(std::string_view text) {
  // The exporter links no library with a public base64 decoder (libcurl keeps its own private).
  static const std::array<signed char, 256> kValues = [] {
    std::array<signed char, 256> values{};
    values.fill(-1);
    const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int i = 0; i < 64; ++i) values[static_cast<unsigned char>(alphabet[i])] = i;
    return values;
  }();
  std::string out;
  out.reserve(text.size() / 4 * 3);
  std::uint32_t bits = 0;
  int count = 0, padding = 0;
  for (char c : text) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '=') {
      ++padding;
      continue;
    }
    int value = kValues[static_cast<unsigned char>(c)];
    if (value < 0 || padding > 0) return Error{"not valid base64"};
    bits = (bits << 6) | static_cast<std::uint32_t>(value);
    if (++count == 4) {
      out.push_back(static_cast<char>(bits >> 16));
      out.push_back(static_cast<char>(bits >> 8));
      out.push_back(static_cast<char>(bits));
      bits = 0;
      count = 0;
    }
  }
  if (count == 1 || padding > 2 || (padding > 0 && count + padding != 4)) {
    return Error{"not valid base64"};
  }
  if (count == 2) out.push_back(static_cast<char>(bits >> 4));
  if (count == 3) {
    out.push_back(static_cast<char>(bits >> 10));
    out.push_back(static_cast<char>(bits >> 2));
  }
  return out;
}

std::string ExpandHome(const std::string& path, const char* home) {
  if (home == nullptr || *home == '\0') return path;
  if (path == "~") return home;
  if (path.rfind("~/", 0) == 0) return std::string(home) + path.substr(1);
  return path;
}

std::string DefaultKubeconfigPath(const char* kubeconfig_variable, const char* home) {
  if (kubeconfig_variable != nullptr) {
    std::istringstream entries(kubeconfig_variable);
    for (std::string entry; std::getline(entries, entry, ':');) {
      if (!entry.empty()) return ExpandHome(entry, home);
    }
  }
  return ExpandHome("~/.kube/config", home);
}

Result<ClusterAccess> ParseKubeconfig(std::string_view text, const std::string& path,
                                      const std::string& context) {
  auto document = YamlDocument::Parse(text);
  if (!document) return Error{fmt::format("kubeconfig {}:{}", path, document.error())};
  YamlNode root = document->root();
  Reader reader(path);
  if (!root.IsMapping()) {
    reader.Fail(root, "(top level)", "expected a mapping, got " + KindOf(root));
    return reader.error();
  }
  std::string context_name =
      context.empty() ? reader.Text(root, "current-context", "current-context") : context;
  if (reader.failed()) return reader.error();
  if (context_name.empty()) {
    return Error{fmt::format(
        "kubeconfig {}: no current-context is set; name one with the source's context key", path)};
  }
  auto context_body = reader.Entry(root, "contexts", "context", context_name);
  if (!context_body) return reader.error();
  std::string context_field = fmt::format("contexts[\"{}\"].context", context_name);
  std::string cluster_name = reader.Text(*context_body, "cluster", context_field);
  std::string user_name = reader.Text(*context_body, "user", context_field);
  if (reader.failed()) return reader.error();
  if (cluster_name.empty()) {
    return Error{fmt::format("kubeconfig {}: context \"{}\" names no cluster", path, context_name)};
  }

  ClusterAccess access;
  access.origin = fmt::format("kubeconfig {} (context {})", path, context_name);
  auto cluster = reader.Entry(root, "clusters", "cluster", cluster_name);
  if (!cluster) return reader.error();
  std::string cluster_field = fmt::format("clusters[\"{}\"].cluster", cluster_name);
  access.server = reader.Text(*cluster, "server", cluster_field);
  access.tls.ca_file = reader.PathField(*cluster, "certificate-authority", cluster_field);
  access.tls.ca_pem = reader.Base64Field(*cluster, "certificate-authority-data", cluster_field);
  access.tls.insecure_skip_verify =
      reader.Flag(*cluster, "insecure-skip-tls-verify", cluster_field);
  for (const char* unsupported : {"tls-server-name", "proxy-url"}) {
    if (!reader.Text(*cluster, unsupported, cluster_field).empty()) {
      reader.Fail(*Find(*cluster, unsupported), cluster_field + "." + unsupported,
                  "is not supported by schedwatch; connect to the server directly");
    }
  }
  if (reader.failed()) return reader.error();
  if (access.server.rfind("https://", 0) != 0 && access.server.rfind("http://", 0) != 0) {
    YamlNode at = Find(*cluster, "server").value_or(*cluster);
    reader.Fail(at, cluster_field + ".server",
                access.server.empty() ? "missing" : "expected an https:// URL");
    return reader.error();
  }
  while (!access.server.empty() && access.server.back() == '/') access.server.pop_back();
  if (access.tls.insecure_skip_verify &&
      (!access.tls.ca_file.empty() || !access.tls.ca_pem.empty())) {
    reader.Fail(*Find(*cluster, "insecure-skip-tls-verify"),
                cluster_field + ".insecure-skip-tls-verify",
                "cannot be combined with a certificate authority (as kubectl refuses it too)");
    return reader.error();
  }

  if (user_name.empty()) return access;  // no credentials: anonymous
  auto user = reader.Entry(root, "users", "user", user_name);
  if (!user) return reader.error();
  std::string user_field = fmt::format("users[\"{}\"].user", user_name);
  for (const char* plugin : {"exec", "auth-provider"}) {
    if (auto node = Find(*user, plugin); node && !node->IsNull()) {
      reader.Fail(*node, user_field + "." + plugin,
                  fmt::format("{} credential plugins are not supported: schedwatch runs no "
                              "external programs; give it a token, tokenFile or client "
                              "certificate (for example a ServiceAccount token)",
                              plugin));
      return reader.error();
    }
  }
  const std::pair<const char*, const char*> kUnsupported[] = {{"username", "basic authentication"},
                                                              {"password", "basic authentication"},
                                                              {"as", "impersonation"},
                                                              {"as-uid", "impersonation"}};
  for (const auto& [key, what] : kUnsupported) {
    if (!reader.Text(*user, key, user_field).empty()) {
      reader.Fail(*Find(*user, key), user_field + "." + key,
                  fmt::format("{} is not supported; use a token or a client certificate", what));
      return reader.error();
    }
  }
  access.token = reader.Text(*user, "token", user_field);
  access.token_file = reader.PathField(*user, "tokenFile", user_field);
  access.tls.client_cert_file = reader.PathField(*user, "client-certificate", user_field);
  access.tls.client_key_file = reader.PathField(*user, "client-key", user_field);
  access.tls.client_cert_pem = reader.Base64Field(*user, "client-certificate-data", user_field);
  access.tls.client_key_pem = reader.Base64Field(*user, "client-key-data", user_field);
  if (reader.failed()) return reader.error();
  bool has_cert = !access.tls.client_cert_file.empty() || !access.tls.client_cert_pem.empty();
  bool has_key = !access.tls.client_key_file.empty() || !access.tls.client_key_pem.empty();
  if (has_cert != has_key) {
    reader.Fail(*user, user_field,
                has_cert ? "client-certificate without client-key"
                         : "client-key without client-certificate");
    return reader.error();
  }
  return access;
}

Result<ClusterAccess> LoadKubeconfig(const std::string& path, const std::string& context) {
  auto text = ReadFile(path, kMaxKubeconfigBytes);
  if (!text) return Error{"kubeconfig: " + text.error()};
  return ParseKubeconfig(*text, path, context);
}

Result<ClusterAccess> InClusterAccess(const char* host, const char* port,
                                      const std::string& service_account_dir) {
  if (host == nullptr || *host == '\0' || port == nullptr || *port == '\0') {
    return Error{
        "in_cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set; is "
        "schedwatch running in a pod?"};
  }
  std::string address = host;
  if (address.find(':') != std::string::npos && address.front() != '[') {
    address = "[" + address + "]";  // IPv6
  }
  ClusterAccess access;
  access.server = fmt::format("https://{}:{}", address, port);
  access.tls.ca_file = service_account_dir + "/ca.crt";
  access.token_file = service_account_dir + "/token";
  access.origin = fmt::format("in-cluster service account ({})", service_account_dir);
  for (const auto& file : {access.tls.ca_file, access.token_file}) {
    if (::access(file.c_str(), R_OK) != 0) {
      return Error{fmt::format("in_cluster: cannot read {}: {}", file, std::strerror(errno))};
    }
  }
  return access;
}

std::string ServiceAccountDir() {
  const char* directory = std::getenv(kServiceAccountDirVariable);
  return directory != nullptr && *directory != '\0' ? directory : kServiceAccountDir;
}

Result<std::string> ReadTokenFile(const std::string& path) {
  auto text = ReadFile(path, kMaxTokenBytes);
  if (!text) return Error{"token file: " + text.error()};
  std::string token = std::move(*text);
  token.erase(0, token.find_first_not_of(" \t\r\n"));
  token.erase(token.find_last_not_of(" \t\r\n") + 1);
  if (token.empty()) return Error{fmt::format("token file {} is empty", path)};
  return token;
}

}  // namespace schedwatch::kubernetes
