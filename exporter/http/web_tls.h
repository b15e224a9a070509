// TLS for the web server (GnuTLS through libmicrohttpd): the key, certificate, client CAs and
// priorities of tls_server_config, and client certificates per client_auth_type.
#pragma once

#include <microhttpd.h>

#include <optional>
#include <string>

#include "exporter/http/web_config.h"
#include "schedwatch/result.h"

namespace schedwatch {

struct TlsMaterial {
  std::string key, cert, trust;  // PEM
  std::string priorities;        // a GnuTLS priority string
};

// Reads and checks the files of `tls` (errors say which file and why).
Result<TlsMaterial> LoadTlsMaterial(const WebConfig::Tls& tls);

// GnuTLS priorities for `tls`.
Result<std::string> TlsPriorities(const WebConfig::Tls& tls);

// Before the handshake of a new connection: what client certificate to ask for, and how to
// verify it, per `client_auth_type`.
void ConfigureClientCertificate(MHD_Connection* connection, const std::string& client_auth_type);

// On each request: why its client certificate is refused (a 403's body), or nullopt.
std::optional<std::string> ClientCertificateRefusal(MHD_Connection* connection,
                                                    const std::string& client_auth_type);

}  // namespace schedwatch
