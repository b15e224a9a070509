// How to reach a Kubernetes API server: from a kubeconfig file or from inside a pod.
//
// Kubeconfig: the current context or a named one; the cluster's server, certificate-authority
// (file) or certificate-authority-data (base64 PEM), insecure-skip-tls-verify; the user's token,
// tokenFile, or client-certificate[-data] + client-key[-data]. Relative paths are relative to
// the kubeconfig's directory. exec and auth-provider plugins, basic auth, proxy-url and
// tls-server-name are refused with a clear error rather than half-honoured.
//
// In-cluster: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT (IPv6 in brackets),
// trusting ca.crt and sending the token of the service-account directory
// (/var/run/secrets/kubernetes.io/serviceaccount, or $SCHEDWATCH_SERVICE_ACCOUNT_DIR).
#pragma once

#include <string>
#include <string_view>

#include "schedwatch/platform/http_client.h"
#include "schedwatch/result.h"

namespace schedwatch::kubernetes {

inline constexpr const char* kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";
inline constexpr const char* kServiceAccountDirVariable = "SCHEDWATCH_SERVICE_ACCOUNT_DIR";

struct ClusterAccess {
  std::string server;  // "https://10.0.0.1:6443" or with a path prefix; no trailing slash
  TlsOptions tls;
  std::string token;       // a bearer token given inline
  std::string token_file;  // or a file holding one, re-read at every list (it rotates)
  std::string origin;      // for messages: "kubeconfig /root/.kube/config (context prod)"
};

// Parses kubeconfig text. `path` names it in messages and anchors relative paths; an empty
// `context` means the file's current-context. Errors never quote credentials.
Result<ClusterAccess> ParseKubeconfig(std::string_view text, const std::string& path,
                                      const std::string& context);

Result<ClusterAccess> LoadKubeconfig(const std::string& path, const std::string& context);

// The kubeconfig to use when the spec names none: $KUBECONFIG's first entry, else
// ~/.kube/config. Arguments are the variables' values (null when unset).
std::string DefaultKubeconfigPath(const char* kubeconfig_variable, const char* home);

// "~/x" -> "$HOME/x"; other paths unchanged.
std::string ExpandHome(const std::string& path, const char* home);

// In-cluster access from the service host and port variables (null when unset) and the
// service-account directory. Checks that the CA and token files exist.
Result<ClusterAccess> InClusterAccess(const char* host, const char* port,
                                      const std::string& service_account_dir);

// $SCHEDWATCH_SERVICE_ACCOUNT_DIR when set (tests, unusual mounts), else kServiceAccountDir.
std::string ServiceAccountDir();

// Standard base64 (RFC 4648, padding optional, whitespace ignored); nullopt-like Error on junk.
Result<std::string> DecodeBase64(std::string_view text);

// The token in `path` without surrounding whitespace. Errors name the file, never its content.
Result<std::string> ReadTokenFile(const std::string& path);

}  // namespace schedwatch::kubernetes
