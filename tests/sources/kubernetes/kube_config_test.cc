// Kubeconfig and in-cluster connection settings.
#include "sources/kubernetes/kube_config.h"

#include <gtest/gtest.h>

#include "sources/kubernetes/kubernetes_source.h"
#include "tests/sources/source_block.h"
#include "tests/test_util.h"

namespace schedwatch::kubernetes {
namespace {

using testing::TempDir;
using testing::WriteFile;

// "hello" and a PEM-like text, base64-encoded.
constexpr const char* kCaData = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkNBCg==";  // "-----BEGIN..."
constexpr const char* kSecretToken = "eyJhbGciOiJSUzI1NiJ9.c2VjcmV0LXRva2Vu.sig";

std::string Kubeconfig(const std::string& user_block, const std::string& cluster_extra = "") {
  return R"(apiVersion: v1
kind: Config
current-context: dev
preferences: {}
contexts:
  - name: dev
    context: {cluster: dev-cluster, user: dev-user, namespace: ops}
  - name: prod
    context:
      cluster: prod-cluster
      user: prod-user
clusters:
  - name: dev-cluster
    cluster:
      server: https://127.0.0.1:6443/
      certificate-authority: certs/ca.crt
)" + cluster_extra +
         R"(
  - name: prod-cluster
    cluster:
      server: https://prod.example.org:6443
      certificate-authority-data: )" +
         kCaData + R"(
users:
  - name: dev-user
    user:
)" + user_block +
         R"(
  - name: prod-user
    user:
      token: )" +
         kSecretToken + "\n";
}

TEST(KubeconfigTest, CurrentContextWithRelativePathsAndClientCertificate) {
  auto access = ParseKubeconfig(Kubeconfig("      client-certificate: certs/client.crt\n"
                                           "      client-key: /abs/client.key\n"),
                                "/home/u/.kube/config", "");
  ASSERT_TRUE(access.ok()) << access.error();
  EXPECT_EQ(access->server, "https://127.0.0.1:6443") << "the trailing slash is dropped";
  EXPECT_EQ(access->tls.ca_file, "/home/u/.kube/certs/ca.crt");
  EXPECT_EQ(access->tls.client_cert_file, "/home/u/.kube/certs/client.crt");
  EXPECT_EQ(access->tls.client_key_file, "/abs/client.key");
  EXPECT_FALSE(access->tls.insecure_skip_verify);
  EXPECT_EQ(access->token, "");
  EXPECT_EQ(access->origin, "kubeconfig /home/u/.kube/config (context dev)");
}

TEST(KubeconfigTest, NamedContextWithCaDataAndToken) {
  auto access = ParseKubeconfig(Kubeconfig("      tokenFile: token\n"), "config", "prod");
  ASSERT_TRUE(access.ok()) << access.error();
  EXPECT_EQ(access->server, "https://prod.example.org:6443");
  EXPECT_EQ(access->tls.ca_pem, "-----BEGIN CERTIFICATE-----\nCA\n");
  EXPECT_EQ(access->tls.ca_file, "");
  EXPECT_EQ(access->token, kSecretToken);
}

TEST(KubeconfigTest, TokenFileAndCertificateData) {
  auto access = ParseKubeconfig(Kubeconfig("      tokenFile: secrets/token\n"
                                           "      client-certificate-data: aGVsbG8=\n"
                                           "      client-key-data: d29ybGQ=\n"),
                                "/etc/kube/config", "dev");
  ASSERT_TRUE(access.ok()) << access.error();
  EXPECT_EQ(access->token_file, "/etc/kube/secrets/token");
  EXPECT_EQ(access->tls.client_cert_pem, "hello");
  EXPECT_EQ(access->tls.client_key_pem, "world");
}

TEST(KubeconfigTest, InsecureSkipTlsVerifyIsHonoured) {
  std::string text = R"(current-context: c
contexts: [{name: c, context: {cluster: k, user: u}}]
clusters: [{name: k, cluster: {server: "https://k:6443", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: abc}}]
)";
  auto access = ParseKubeconfig(text, "/k", "");
  ASSERT_TRUE(access.ok()) << access.error();
  EXPECT_TRUE(access->tls.insecure_skip_verify);
}

struct BadKubeconfig {
  std::string name;
  std::string user_block;
  std::string cluster_extra;
  std::string context;
  std::string expected;
};

void PrintTo(const BadKubeconfig& bad, std::ostream* out) { *out << bad.name; }

class BadKubeconfigTest : public ::testing::TestWithParam<BadKubeconfig> {};

TEST_P(BadKubeconfigTest, IsRefusedWithAClearMessageAndNoSecret) {
  const BadKubeconfig& bad = GetParam();
  auto access =
      ParseKubeconfig(Kubeconfig(bad.user_block, bad.cluster_extra), "/k/config", bad.context);
  ASSERT_FALSE(access.ok());
  EXPECT_EQ(access.error(), bad.expected);
  EXPECT_EQ(access.error().find(kSecretToken), std::string::npos);
  EXPECT_EQ(access.error().find("c2VjcmV0"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    Kubeconfig, BadKubeconfigTest,
    ::testing::Values(
        BadKubeconfig{"ExecPlugin",
                      "      exec:\n        apiVersion: client.authentication.k8s.io/v1\n"
                      "        command: aws\n",
                      "", "",
                      "kubeconfig /k/config:26:9: users[\"dev-user\"].user.exec: exec credential "
                      "plugins are not supported: schedwatch runs no external programs; give it "
                      "a token, tokenFile or client certificate (for example a ServiceAccount "
                      "token)"},
        BadKubeconfig{"AuthProvider", "      auth-provider:\n        name: gcp\n", "", "",
                      "kubeconfig /k/config:26:9: users[\"dev-user\"].user.auth-provider: "
                      "auth-provider credential plugins are not supported: schedwatch runs no "
                      "external programs; give it a token, tokenFile or client certificate (for "
                      "example a ServiceAccount token)"},
        BadKubeconfig{"BasicAuth", "      username: admin\n      password: c2VjcmV0\n", "", "",
                      "kubeconfig /k/config:25:17: users[\"dev-user\"].user.username: basic "
                      "authentication is not supported; use a token or a client certificate"},
        BadKubeconfig{"UnknownContext", "      token: x\n", "", "staging",
                      "kubeconfig /k/config: context \"staging\" not found (there are dev, prod)"},
        BadKubeconfig{"TokenNotAString", "      token: [c2VjcmV0]\n", "", "",
                      "kubeconfig /k/config:25:14: users[\"dev-user\"].user.token: expected a "
                      "string, got a list"},
        BadKubeconfig{"BadBase64", "      client-certificate-data: c2VjcmV0!\n", "", "",
                      "kubeconfig /k/config:25:32: users[\"dev-user\"].user."
                      "client-certificate-data: not valid base64"},
        BadKubeconfig{"CertificateWithoutKey", "      client-certificate: c.crt\n", "", "",
                      "kubeconfig /k/config:25:7: users[\"dev-user\"].user: client-certificate "
                      "without client-key"},
        BadKubeconfig{"InsecureWithCa", "      token: x\n",
                      "      insecure-skip-tls-verify: true\n", "",
                      "kubeconfig /k/config:17:33: clusters[\"dev-cluster\"].cluster."
                      "insecure-skip-tls-verify: cannot be combined with a certificate authority "
                      "(as kubectl refuses it too)"},
        BadKubeconfig{"ProxyUrl", "      token: x\n", "      proxy-url: http://proxy:3128\n", "",
                      "kubeconfig /k/config:17:18: clusters[\"dev-cluster\"].cluster.proxy-url: "
                      "is not supported by schedwatch; connect to the server directly"}),
    [](const ::testing::TestParamInfo<BadKubeconfig>& info) { return info.param.name; });

TEST(KubeconfigTest, StructuralProblems) {
  EXPECT_EQ(ParseKubeconfig("- a\n", "/k", "").error(),
            "kubeconfig /k:1:1: (top level): expected a mapping, got a list");
  EXPECT_EQ(ParseKubeconfig("contexts: []\n", "/k", "").error(),
            "kubeconfig /k: no current-context is set; name one with the source's context key");
  EXPECT_EQ(ParseKubeconfig("current-context: a\ncontexts: {}\n", "/k", "").error(),
            "kubeconfig /k:2:11: contexts: expected a list, got a mapping");
  EXPECT_EQ(ParseKubeconfig("current-context: a\n", "/k", "").error(),
            "kubeconfig /k: context \"a\" not found (there are none)");
  EXPECT_EQ(ParseKubeconfig("a: [\n", "/k", "").error().rfind("kubeconfig /k:2:1: ", 0), 0u);
  EXPECT_EQ(ParseKubeconfig("current-context: a\ncontexts: [{name: a, context: {cluster: c}}]\n"
                            "clusters: [{name: c, cluster: {server: ftp://x}}]\n",
                            "/k", "")
                .error(),
            "kubeconfig /k:3:40: clusters[\"c\"].cluster.server: expected an https:// URL");
  EXPECT_EQ(ParseKubeconfig("current-context: a\ncontexts: [{name: a, context: {cluster: c}}]\n"
                            "clusters: [{name: c, cluster: {}}]\n",
                            "/k", "")
                .error(),
            "kubeconfig /k:3:31: clusters[\"c\"].cluster.server: missing");
}

TEST(KubeconfigTest, ContextWithoutUserIsAnonymous) {
  auto access = ParseKubeconfig(
      "current-context: a\ncontexts: [{name: a, context: {cluster: c}}]\n"
      "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:8080'}}]\n",
      "/k", "");
  ASSERT_TRUE(access.ok()) << access.error();
  EXPECT_EQ(access->server, "http://127.0.0.1:8080");
  EXPECT_EQ(access->token, "");
}

TEST(KubeconfigTest, LoadReadsTheFileAndNamesItWhenMissing) {
  TempDir directory;
  auto path = directory.path() / "config";
  WriteFile(path, Kubeconfig("      token: abc\n"));
  auto access = LoadKubeconfig(path.string(), "");
  ASSERT_TRUE(access.ok()) << access.error();
  EXPECT_EQ(access->tls.ca_file, (directory.path() / "certs/ca.crt").string());
  auto missing = LoadKubeconfig((directory.path() / "nope").string(), "");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error(), "kubeconfig: cannot read " + (directory.path() / "nope").string() +
                                 ": No such file or directory");
}

TEST(KubeconfigTest, DefaultPathAndHomeExpansion) {
  EXPECT_EQ(DefaultKubeconfigPath(nullptr, "/home/u"), "/home/u/.kube/config");
  EXPECT_EQ(DefaultKubeconfigPath("", "/home/u"), "/home/u/.kube/config");
  EXPECT_EQ(DefaultKubeconfigPath("/a/one:/b/two", "/home/u"), "/a/one");
  EXPECT_EQ(DefaultKubeconfigPath(":~/x", "/home/u"), "/home/u/x");
  EXPECT_EQ(ExpandHome("~/k", "/h"), "/h/k");
  EXPECT_EQ(ExpandHome("~other/k", "/h"), "~other/k");
  EXPECT_EQ(ExpandHome("~/k", nullptr), "~/k");
}

TEST(InClusterTest, BuildsTheServiceUrlAndChecksTheFiles) {
  TempDir directory;
  WriteFile(directory.path() / "ca.crt", "CA");
  WriteFile(directory.path() / "token", "tok\n");
  auto access = InClusterAccess("10.96.0.1", "443", directory.path().string());
  ASSERT_TRUE(access.ok()) << access.error();
  EXPECT_EQ(access->server, "https://10.96.0.1:443");
  EXPECT_EQ(access->tls.ca_file, (directory.path() / "ca.crt").string());
  EXPECT_EQ(access->token_file, (directory.path() / "token").string());

  auto v6 = InClusterAccess("fd00::1", "6443", directory.path().string());
  ASSERT_TRUE(v6.ok()) << v6.error();
  EXPECT_EQ(v6->server, "https://[fd00::1]:6443");

  EXPECT_EQ(InClusterAccess(nullptr, "443", directory.path().string()).error(),
            "in_cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set; is "
            "schedwatch running in a pod?");
  std::filesystem::remove(directory.path() / "ca.crt");
  EXPECT_EQ(InClusterAccess("10.96.0.1", "443", directory.path().string()).error(),
            "in_cluster: cannot read " + (directory.path() / "ca.crt").string() +
                ": No such file or directory");
}

TEST(InClusterTest, ServiceAccountDirectoryCanBeMovedByEnvironment) {
  unsetenv(kServiceAccountDirVariable);
  EXPECT_EQ(ServiceAccountDir(), "/var/run/secrets/kubernetes.io/serviceaccount");
  setenv(kServiceAccountDirVariable, "/tmp/sa", 1);
  EXPECT_EQ(ServiceAccountDir(), "/tmp/sa");
  unsetenv(kServiceAccountDirVariable);
}

TEST(TokenFileTest, TrimsAndRefusesEmptyFilesWithoutQuotingThem) {
  TempDir directory;
  auto path = directory.path() / "token";
  WriteFile(path, "  abc.def \n");
  EXPECT_EQ(ReadTokenFile(path.string()).value(), "abc.def");
  WriteFile(path, "\n");
  EXPECT_EQ(ReadTokenFile(path.string()).error(), "token file " + path.string() + " is empty");
  WriteFile(path, std::string(70000, 'x'));
  auto large = ReadTokenFile(path.string());
  ASSERT_FALSE(large.ok());
  EXPECT_EQ(large.error().find("xxxx"), std::string::npos);
}

TEST(Base64Test, DecodesStandardBase64) {
  EXPECT_EQ(DecodeBase64("aGVsbG8=").value(), "hello");
  EXPECT_EQ(DecodeBase64("aGVsbG8").value(), "hello") << "padding is optional";
  EXPECT_EQ(DecodeBase64("aGVs\nbG8h").value(),
            "hell"
            "o!");
  EXPECT_EQ(DecodeBase64("").value(), "");
  EXPECT_FALSE(DecodeBase64("aGVsbG8=x").ok());
  EXPECT_FALSE(DecodeBase64("a").ok());
  EXPECT_FALSE(DecodeBase64("aGVsbG8-").ok()) << "URL-safe alphabet is not kubeconfig's";
  EXPECT_FALSE(DecodeBase64("aG===").ok());
}

SourceSpec Spec(std::map<std::string, std::vector<std::string>> settings) {
  auto spec = testing::DecodeSourceBlock("prod", "kubernetes", settings);
  EXPECT_TRUE(spec.ok()) << spec.error();
  return spec.ok() ? *spec : SourceSpec{};
}

TEST(SettingsTest, DefaultsAndValidation) {
  auto defaults = ReadSettings(Spec({}), "/from/env:/other", "/home/u");
  ASSERT_TRUE(defaults.ok()) << defaults.error();
  EXPECT_EQ(defaults->kubeconfig, "/from/env");
  EXPECT_EQ(defaults->page_size, 500);
  EXPECT_FALSE(defaults->timeout.has_value());
  EXPECT_TRUE(defaults->namespaces.empty());

  auto set = ReadSettings(Spec({{"kubeconfig", {"~/k"}},
                                {"context", {"prod"}},
                                {"namespaces", {"batch", "ops", "batch"}},
                                {"page_size", {"50"}},
                                {"timeout", {"7s"}}}),
                          nullptr, "/home/u");
  ASSERT_TRUE(set.ok()) << set.error();
  EXPECT_EQ(set->kubeconfig, "/home/u/k");
  EXPECT_EQ(set->context, "prod");
  EXPECT_EQ(set->namespaces, (std::vector<std::string>{"batch", "ops"}));
  EXPECT_EQ(set->page_size, 50);
  EXPECT_EQ(set->timeout, std::chrono::seconds(7));

  auto in_cluster = ReadSettings(Spec({{"in_cluster", {"true"}}}), nullptr, "/home/u");
  ASSERT_TRUE(in_cluster.ok());
  EXPECT_TRUE(in_cluster->in_cluster);
  EXPECT_EQ(in_cluster->kubeconfig, "");
  // What is wrong is refused with the spec: see source_descriptors_test.cc.
}

}  // namespace
}  // namespace schedwatch::kubernetes
