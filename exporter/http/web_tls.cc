#include "exporter/http/web_tls.h"

#include <fmt/format.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include <algorithm>
#include <string_view>
#include <vector>

#include "schedwatch/platform/file.h"
#include "schedwatch/platform/log.h"

namespace schedwatch {
namespace {

// A TLS file, which LoadWebConfigFile has already checked is a regular file of at most 1 MiB.
Result<std::string> ReadTlsFile(const std::string& path) {
  return platform::ReadRegularFile(path, 1u << 20);
}

}  // namespace

// GnuTLS priorities for the versions min..max ("TLS10".."TLS13").
Result<std::string> TlsPriorities(const WebConfig::Tls& tls) {
  static const char* const kVersions[] = {"TLS10", "TLS11", "TLS12", "TLS13"};
  static const char* const kGnutls[] = {"VERS-TLS1.0", "VERS-TLS1.1", "VERS-TLS1.2", "VERS-TLS1.3"};
  auto index = [](const std::string& name, int otherwise) {
    for (int i = 0; i < 4; ++i) {
      if (name == kVersions[i]) return i;
    }
    return name.empty() ? otherwise : -1;
  };
  int low = index(tls.min_version, 2), high = index(tls.max_version, 3);
  if (low < 0 || high < 0 || low > high) {
    return Error{fmt::format("TLS versions {}..{} make an empty range", tls.min_version,
                             tls.max_version.empty() ? "any" : tls.max_version)};
  }
  std::string priorities = "NORMAL:-VERS-ALL";
  for (int i = high; i >= low; --i) priorities += std::string(":+") + kGnutls[i];
  // Without cipher_suites, what Go's crypto/tls offers by default (node_exporter's): ECDHE key
  // exchange with AEAD ciphers, Go's groups, in the server's order. GnuTLS's own default adds
  // static RSA, DHE, CBC and CCM.
  std::vector<std::string_view> exchanges, ciphers, macs;
  auto add = [](std::vector<std::string_view>& list, std::string_view name) {
    if (!name.empty() && std::find(list.begin(), list.end(), name) == list.end()) {
      list.push_back(name);
    }
  };
  for (const auto& name : tls.cipher_suites) {
    const CipherSuite* suite = FindCipherSuite(name);
    if (suite == nullptr) return Error{fmt::format("unknown cipher suite {}", name)};
    add(exchanges, suite->key_exchange);
    add(ciphers, suite->cipher);
    add(macs, suite->mac);
  }
  if (exchanges.empty()) exchanges = {"ECDHE-ECDSA", "ECDHE-RSA"};  // none, or TLS 1.3's only
  if (ciphers.empty()) ciphers = {"AES-128-GCM", "AES-256-GCM", "CHACHA20-POLY1305"};
  if (macs.empty()) macs = {"AEAD"};
  priorities += ":-KX-ALL";
  for (auto name : exchanges) priorities += fmt::format(":+{}", name);
  priorities += ":-CIPHER-ALL";
  for (auto name : ciphers) priorities += fmt::format(":+{}", name);
  priorities += ":-MAC-ALL";
  for (auto name : macs) priorities += fmt::format(":+{}", name);
  priorities += ":-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:+GROUP-SECP384R1:+GROUP-SECP521R1";
  if (tls.prefer_server_cipher_suites) priorities += ":%SERVER_PRECEDENCE";
  gnutls_priority_t parsed = nullptr;
  const char* at = nullptr;
  int status = gnutls_priority_init(&parsed, priorities.c_str(), &at);
  if (status < 0) {
    return Error{fmt::format("TLS priorities \"{}\": {}", priorities, gnutls_strerror(status))};
  }
  gnutls_priority_deinit(parsed);
  return priorities;
}

namespace {

// VerifyClientCertIfGiven: a client that sends no certificate is served (as Go's crypto/tls
// does); one that sends a certificate that does not verify fails the handshake.
int VerifyIfGiven(gnutls_session_t session) {
  unsigned count = 0;
  const gnutls_datum_t* certificates = gnutls_certificate_get_peers(session, &count);
  if (certificates == nullptr || count == 0) return 0;
  gnutls_typed_vdata_st purpose{
      GNUTLS_DT_KEY_PURPOSE_OID,
      reinterpret_cast<unsigned char*>(const_cast<char*>(GNUTLS_KP_TLS_WWW_CLIENT)), 0};
  unsigned status = 0;
  if (gnutls_certificate_verify_peers(session, &purpose, 1, &status) != GNUTLS_E_SUCCESS ||
      status != 0) {
    return GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR;
  }
  return 0;
}

}  // namespace

Result<TlsMaterial> LoadTlsMaterial(const WebConfig::Tls& tls) {
  TlsMaterial material;
  {
    auto key = ReadTlsFile(tls.key_file);
    if (!key) return Error{key.error()};
    auto cert = ReadTlsFile(tls.cert_file);
    if (!cert) return Error{cert.error()};
    material.key = std::move(*key);
    material.cert = std::move(*cert);
    if (!tls.client_ca_file.empty()) {
      auto trust = ReadTlsFile(tls.client_ca_file);
      if (!trust) return Error{trust.error()};
      material.trust = std::move(*trust);
    } else if (tls.client_auth_type == "RequestClientCert" ||
               tls.client_auth_type == "RequireAnyClientCert") {
      // libmicrohttpd asks for a client certificate only when it has CAs to name; any
      // certificate is taken here, so the server's own stands in.
      material.trust = material.cert;
    }
    auto priorities = TlsPriorities(tls);
    if (!priorities) return Error{priorities.error()};
    material.priorities = std::move(*priorities);
    // Say what is wrong with the key or certificate here: libmicrohttpd would only fail.
    gnutls_certificate_credentials_t credentials = nullptr;
    gnutls_certificate_allocate_credentials(&credentials);
    gnutls_datum_t cert_data{reinterpret_cast<unsigned char*>(material.cert.data()),
                             static_cast<unsigned>(material.cert.size())};
    gnutls_datum_t key_data{reinterpret_cast<unsigned char*>(material.key.data()),
                            static_cast<unsigned>(material.key.size())};
    int loaded = gnutls_certificate_set_x509_key_mem(credentials, &cert_data, &key_data,
                                                     GNUTLS_X509_FMT_PEM);
    int trusted = 0;
    if (loaded >= 0 && !tls.client_ca_file.empty()) {
      gnutls_datum_t ca_data{reinterpret_cast<unsigned char*>(material.trust.data()),
                             static_cast<unsigned>(material.trust.size())};
      trusted = gnutls_certificate_set_x509_trust_mem(credentials, &ca_data, GNUTLS_X509_FMT_PEM);
    }
    gnutls_certificate_free_credentials(credentials);
    if (loaded < 0) {
      return Error{fmt::format("cert_file {} with key_file {}: {}", tls.cert_file, tls.key_file,
                               gnutls_strerror(loaded))};
    }
    if (trusted <= 0 && !tls.client_ca_file.empty()) {
      return Error{fmt::format("client_ca_file {}: {}", tls.client_ca_file,
                               trusted < 0 ? gnutls_strerror(trusted) : "no certificate in it")};
    }
  }
  return material;
}

void ConfigureClientCertificate(MHD_Connection* connection, const std::string& type) {
  if (type == "NoClientCert" || type == "RequestClientCert") return;
  const MHD_ConnectionInfo* info =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_GNUTLS_SESSION);
  if (info == nullptr || info->tls_session == nullptr) return;
  auto session = static_cast<gnutls_session_t>(info->tls_session);
  if (type == "RequireAnyClientCert" || type == "RequireAndVerifyClientCert") {
    gnutls_certificate_server_set_request(session, GNUTLS_CERT_REQUIRE);
  }
  if (type == "VerifyClientCertIfGiven") {
    gnutls_session_set_verify_function(session, &VerifyIfGiven);
  } else if (type == "RequireAndVerifyClientCert") {
    static gnutls_typed_vdata_st purpose{
        GNUTLS_DT_KEY_PURPOSE_OID,
        reinterpret_cast<unsigned char*>(const_cast<char*>(GNUTLS_KP_TLS_WWW_CLIENT)), 0};
    gnutls_session_set_verify_cert2(session, &purpose, 1, 0);
  }
}

std::optional<std::string> ClientCertificateRefusal(MHD_Connection* connection,
                                                    const std::string& type) {
  bool required = type == "RequireAnyClientCert" || type == "RequireAndVerifyClientCert";
  bool verified = type == "VerifyClientCertIfGiven" || type == "RequireAndVerifyClientCert";
  if (!required && !verified) return std::nullopt;
  const MHD_ConnectionInfo* info =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_GNUTLS_SESSION);
  if (info == nullptr) return std::string("no TLS session\n");
  auto session = static_cast<gnutls_session_t>(info->tls_session);
  unsigned count = 0;
  const gnutls_datum_t* certificates = gnutls_certificate_get_peers(session, &count);
  bool given = certificates != nullptr && count > 0;
  if (required && !given) return std::string("a client certificate is required\n");
  if (verified && given) {
    gnutls_typed_vdata_st purpose{};
    purpose.type = GNUTLS_DT_KEY_PURPOSE_OID;
    purpose.data = reinterpret_cast<unsigned char*>(const_cast<char*>(GNUTLS_KP_TLS_WWW_CLIENT));
    unsigned status = 0;
    if (gnutls_certificate_verify_peers(session, &purpose, 1, &status) != GNUTLS_E_SUCCESS ||
        status != 0) {
      Log(LogLevel::kDebug, "client certificate refused",
          {{"reason", [&] {
              gnutls_datum_t text{};
              std::string why = "unknown";
              if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &text, 0) ==
                  GNUTLS_E_SUCCESS) {
                why.assign(reinterpret_cast<char*>(text.data), text.size);
                gnutls_free(text.data);
              }
              return why;
            }()}});
      return std::string("the client certificate is not trusted\n");
    }
  }
  return std::nullopt;
}

}  // namespace schedwatch
