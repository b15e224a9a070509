// The shared HTTP client against a real TLS server on loopback (tests/sources/kubernetes/
// fake_apiserver.py) with a CA and certificates made by openssl for the test.
#include "schedwatch/platform/http_client.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "tests/fixtures/loopback.h"
#include "tests/sources/kubernetes/fake_server.h"
#include "tests/test_util.h"

namespace schedwatch {
namespace {

using std::chrono::milliseconds;
using testing::FakeApiServer;
using testing::ReadWholeFile;
using testing::SharedPki;
using testing::TempDir;

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

class HttpClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    directory_ = new TempDir();
    server_ = new FakeApiServer(directory_->path(), nlohmann::json::object());
  }
  static void TearDownTestSuite() {
    delete server_;
    delete directory_;
  }

  static std::string Pki(const std::string& name) { return (SharedPki() / name).string(); }
  static TlsOptions TrustTestCa() {
    TlsOptions tls;
    tls.ca_file = Pki("ca.crt");
    return tls;
  }
  static HttpRequest Get(const std::string& path) {
    HttpRequest request;
    request.url = server_->url() + path;
    return request;
  }

  static TempDir* directory_;
  static FakeApiServer* server_;
};

TempDir* HttpClientTest::directory_ = nullptr;
FakeApiServer* HttpClientTest::server_ = nullptr;

TEST_F(HttpClientTest, VerifiesTheServerAgainstTheGivenCaFile) {
  HttpClient client(TrustTestCa());
  HttpFailure failure = HttpFailure::kOther;
  auto response = client.Send(Get("/echo"), nullptr, &failure);
  ASSERT_TRUE(response.ok()) << response.error();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(failure, HttpFailure::kNone);
  EXPECT_EQ(response->Header("content-type"), "application/json");
  EXPECT_NE(response->body.find("\"headers\""), std::string::npos);
}

TEST_F(HttpClientTest, VerifiesTheServerAgainstCaPemData) {
  TlsOptions tls;
  tls.ca_pem = ReadWholeFile(SharedPki() / "ca.crt");
  HttpClient client(tls);
  auto response = client.Send(Get("/echo"));
  ASSERT_TRUE(response.ok()) << response.error();
  EXPECT_EQ(response->status, 200);
}

TEST_F(HttpClientTest, RefusesTheServerWithoutItsCa) {
  HttpClient client;  // the system's CAs do not know the test CA
  HttpFailure failure = HttpFailure::kNone;
  auto response = client.Send(Get("/echo"), nullptr, &failure);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(failure, HttpFailure::kTls);
  EXPECT_NE(response.error().find("certificate"), std::string::npos) << response.error();
  EXPECT_EQ(response.error().rfind("GET /echo: ", 0), 0u) << response.error();
}

TEST_F(HttpClientTest, RefusesTheServerWhenAnotherCaIsGiven) {
  TlsOptions tls;
  tls.ca_file = Pki("other-ca.crt");
  HttpClient client(tls);
  HttpFailure failure = HttpFailure::kNone;
  auto response = client.Send(Get("/echo"), nullptr, &failure);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(failure, HttpFailure::kTls);
}

TEST_F(HttpClientTest, InsecureSkipVerifyAcceptsAnUnknownCa) {
  TlsOptions tls;
  tls.insecure_skip_verify = true;
  HttpClient client(tls);
  auto response = client.Send(Get("/echo"));
  ASSERT_TRUE(response.ok()) << response.error();
  EXPECT_EQ(response->status, 200);
}

TEST_F(HttpClientTest, SendsAClientCertificateFromFiles) {
  TlsOptions tls = TrustTestCa();
  tls.client_cert_file = Pki("client.crt");
  tls.client_key_file = Pki("client.key");
  HttpClient client(tls);
  auto response = client.Send(Get("/echo"));
  ASSERT_TRUE(response.ok()) << response.error();
  EXPECT_EQ(nlohmann::json::parse(response->body)["client_cn"], "schedwatch-client");
}

TEST_F(HttpClientTest, SendsAClientCertificateFromPemData) {
  TlsOptions tls = TrustTestCa();
  tls.client_cert_pem = ReadWholeFile(SharedPki() / "client.crt");
  tls.client_key_pem = ReadWholeFile(SharedPki() / "client.key");
  HttpClient client(tls);
  auto response = client.Send(Get("/echo"));
  ASSERT_TRUE(response.ok()) << response.error();
  EXPECT_EQ(nlohmann::json::parse(response->body)["client_cn"], "schedwatch-client");

  HttpClient anonymous(TrustTestCa());
  auto without = anonymous.Send(Get("/echo"));
  ASSERT_TRUE(without.ok()) << without.error();
  EXPECT_TRUE(nlohmann::json::parse(without->body)["client_cn"].is_null());
}

TEST_F(HttpClientTest, SendsHeadersAndReturnsEveryStatusAsAResponse) {
  HttpClient client(TrustTestCa());
  HttpRequest request = Get("/echo");
  request.headers = {{"X-Test", "value 1"}, {"Accept", "application/json"}};
  auto echoed = client.Send(request);
  ASSERT_TRUE(echoed.ok()) << echoed.error();
  auto headers = nlohmann::json::parse(echoed->body)["headers"];
  EXPECT_EQ(headers["X-Test"], "value 1");
  EXPECT_EQ(headers["Accept"], "application/json");

  auto unavailable = client.Send(Get("/status/503"));
  ASSERT_TRUE(unavailable.ok()) << unavailable.error();
  EXPECT_EQ(unavailable->status, 503);
  EXPECT_NE(unavailable->body.find("status 503"), std::string::npos);
}

TEST_F(HttpClientTest, KeepsTheConnectionAlive) {
  HttpClient client(TrustTestCa());
  for (int i = 0; i < 3; ++i) {
    auto response = client.Send(Get("/echo?keepalive=" + std::to_string(i)));
    ASSERT_TRUE(response.ok()) << response.error();
  }
  std::set<int> ports;
  for (const auto& request : server_->Requests()) {
    if (request["query"].contains("keepalive")) ports.insert(request["client_port"].get<int>());
  }
  EXPECT_EQ(ports.size(), 1u) << "each request opened a new connection";
}

TEST_F(HttpClientTest, TotalTimeout) {
  HttpClient client(TrustTestCa());
  HttpRequest request = Get("/slow?seconds=3");
  request.timeout = milliseconds(400);
  HttpFailure failure = HttpFailure::kNone;
  auto start = Clock::now();
  auto response = client.Send(request, nullptr, &failure);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(failure, HttpFailure::kTimeout);
  EXPECT_LT(SecondsSince(start), 2.0);
  EXPECT_NE(response.error().find("timed out"), std::string::npos) << response.error();
}

TEST_F(HttpClientTest, ConnectTimeoutCoversTheTlsHandshake) {
  // A socket that listens but never accepts: the kernel completes TCP, nobody answers TLS.
  testing::LoopbackListener listener;

  HttpClient client(TrustTestCa());
  HttpRequest request;
  request.url = "https://127.0.0.1:" + std::to_string(listener.port()) + "/x";
  request.connect_timeout = milliseconds(300);
  request.timeout = milliseconds(5000);
  HttpFailure failure = HttpFailure::kNone;
  auto start = Clock::now();
  auto response = client.Send(request, nullptr, &failure);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(failure, HttpFailure::kTimeout);
  EXPECT_LT(SecondsSince(start), 2.0);
}

TEST_F(HttpClientTest, RefusedConnectionIsAConnectFailure) {
  HttpClient client(TrustTestCa());
  HttpRequest request;
  request.url = "https://127.0.0.1:" + std::to_string(testing::UnusedLoopbackPort()) + "/x";
  HttpFailure failure = HttpFailure::kNone;
  auto response = client.Send(request, nullptr, &failure);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(failure, HttpFailure::kConnect);
}

// Sends a 5-second request and cancels it after 300 ms; returns how long Send took.
double SendCancelledAfter300ms(HttpClient& client, const HttpRequest& request,
                               Result<HttpResponse>& response, HttpFailure& failure) {
  std::atomic<bool> cancelled{false};
  std::thread canceller([&] {
    std::this_thread::sleep_for(milliseconds(300));
    cancelled = true;
  });
  auto start = Clock::now();
  response = client.Send(request, &cancelled, &failure);
  double elapsed = SecondsSince(start);
  canceller.join();
  return elapsed;
}

TEST_F(HttpClientTest, CancellationAbortsAnIdleWaitPromptly) {
  HttpClient client(TrustTestCa());
  Result<HttpResponse> response = Error{"not sent"};
  HttpFailure failure = HttpFailure::kNone;
  double elapsed = SendCancelledAfter300ms(client, Get("/slow?seconds=5"), response, failure);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(failure, HttpFailure::kCancelled);
  EXPECT_EQ(response.error(), "GET /slow: cancelled");
  EXPECT_LT(elapsed, 1.0);
}

TEST_F(HttpClientTest, CancellationAbortsADripFeed) {
  HttpClient client(TrustTestCa());
  Result<HttpResponse> response = Error{"not sent"};
  HttpFailure failure = HttpFailure::kNone;
  double elapsed = SendCancelledAfter300ms(client, Get("/drip?seconds=5"), response, failure);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(failure, HttpFailure::kCancelled);
  EXPECT_LT(elapsed, 1.0);
}

TEST_F(HttpClientTest, AnAlreadyCancelledRequestIsNotSent) {
  HttpClient client(TrustTestCa());
  std::atomic<bool> cancelled{true};
  HttpFailure failure = HttpFailure::kNone;
  auto response = client.Send(Get("/echo?never"), &cancelled, &failure);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(failure, HttpFailure::kCancelled);
  for (const auto& request : server_->Requests()) EXPECT_FALSE(request["query"].contains("never"));
}

TEST_F(HttpClientTest, BodySizeCap) {
  HttpClient client(TrustTestCa());
  HttpRequest request = Get("/bytes?n=5000");
  request.max_body_bytes = 4096;
  HttpFailure failure = HttpFailure::kNone;
  auto response = client.Send(request, nullptr, &failure);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(failure, HttpFailure::kTooLarge);
  EXPECT_EQ(response.error(), "GET /bytes: answer larger than 4096 bytes");

  request.url = server_->url() + "/bytes?n=4096";
  auto fits = client.Send(request);
  ASSERT_TRUE(fits.ok()) << fits.error();
  EXPECT_EQ(fits->body.size(), 4096u);
}

TEST_F(HttpClientTest, AStreamGoesToOnDataUntilItSaysStop) {
  HttpClient client(TrustTestCa());
  HttpRequest request = Get("/drip?seconds=20");
  std::string streamed;
  request.on_data = [&streamed](std::string_view data) {
    streamed.append(data);
    return streamed.size() < 3;
  };
  auto response = client.Send(request);
  ASSERT_TRUE(response.ok()) << response.error();
  EXPECT_EQ(response->status, 200);
  EXPECT_TRUE(response->body.empty()) << "a stream is handed over, not kept";
  EXPECT_GE(streamed.size(), 3u);
}

TEST_F(HttpClientTest, AStreamThatBringsNothingForItsIdleTimeoutIsATimeout) {
  HttpClient client(TrustTestCa());
  HttpRequest request = Get("/slow?seconds=20");
  request.on_data = [](std::string_view) { return true; };
  request.idle_timeout = milliseconds(300);
  HttpFailure failure = HttpFailure::kNone;
  auto response = client.Send(request, nullptr, &failure);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(failure, HttpFailure::kTimeout);
  EXPECT_EQ(response.error(), "GET /slow: no data for 300 ms");
}

TEST_F(HttpClientTest, AnErrorAnswerToAStreamIsKept) {
  HttpClient client(TrustTestCa());
  HttpRequest request = Get("/status/410");
  bool streamed = false;
  request.on_data = [&streamed](std::string_view) { return streamed = true; };
  auto response = client.Send(request);
  ASSERT_TRUE(response.ok()) << response.error();
  EXPECT_EQ(response->status, 410);
  EXPECT_FALSE(streamed);
  EXPECT_NE(response->body.find("status 410"), std::string::npos) << response->body;
}

TEST_F(HttpClientTest, ErrorsHoldNoHeaderValuesQueriesOrHosts) {
  const std::string secret = "s3cr3t-token-value";
  auto check = [&](const TlsOptions& tls, const std::string& url, milliseconds timeout) {
    HttpClient client(tls);
    HttpRequest request;
    request.url = url;
    request.timeout = timeout;
    request.headers = {{"Authorization", "Bearer " + secret}, {"X-Api-Key", secret}};
    auto response = client.Send(request);
    ASSERT_FALSE(response.ok()) << url;
    EXPECT_EQ(response.error().find(secret), std::string::npos) << response.error();
    EXPECT_EQ(response.error().find("Bearer"), std::string::npos) << response.error();
  };
  std::string base = server_->url();
  check({}, base + "/echo?token=" + secret, milliseconds(5000));                      // TLS
  check(TrustTestCa(), base + "/slow?seconds=3&token=" + secret, milliseconds(300));  // timeout
  TlsOptions insecure;
  insecure.insecure_skip_verify = true;
  check(insecure, "https://user:" + secret + "@127.0.0.1:1/x", milliseconds(1000));  // refused
}

TEST_F(HttpClientTest, AnEchoedCredentialIsRedactedFromTheAnswer) {
  // /echo answers with the request's headers: a proxy's 401 page quoting them, say.
  const std::string secret = "s3cr3t-token-value/with+slash";
  HttpClient client(TrustTestCa());
  HttpRequest request = Get("/echo");
  request.headers = {{"Authorization", "Bearer " + secret}};
  auto response = client.Send(request);
  ASSERT_TRUE(response.ok()) << response.error();
  EXPECT_EQ(response->body.find("s3cr3t-token"), std::string::npos) << response->body;
  EXPECT_NE(response->body.find("[redacted]"), std::string::npos) << response->body;
}

TEST_F(HttpClientTest, ACaFileThatIsAFifoIsRefusedWithoutBlocking) {
  TempDir directory;
  std::string fifo = (directory.path() / "ca.crt").string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  TlsOptions tls;
  tls.ca_file = fifo;
  HttpClient client(tls);
  HttpFailure failure = HttpFailure::kNone;
  auto start = Clock::now();
  auto response = client.Send(Get("/echo"), nullptr, &failure);
  EXPECT_LT(SecondsSince(start), 2.0);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(failure, HttpFailure::kTls);
  EXPECT_EQ(response.error(),
            "GET /echo: cannot read " + fifo + ": it is a FIFO, not a regular file");
}

TEST_F(HttpClientTest, ServesOverIpv6Loopback) {
  TempDir directory;
  FakeApiServer::Options options;
  options.host = "::1";
  FakeApiServer server(directory.path(), nlohmann::json::object(), options);
  HttpClient client(TrustTestCa());
  HttpRequest request;
  request.url = server.url() + "/echo";
  ASSERT_EQ(request.url.rfind("https://[::1]:", 0), 0u);
  auto response = client.Send(request);
  ASSERT_TRUE(response.ok()) << response.error();
  EXPECT_EQ(response->status, 200);
}

TEST(HttpClientHelpersTest, UrlPathForMessagesDropsHostAndQuery) {
  EXPECT_EQ(UrlPathForMessages("https://h:6443/apis/batch/v1/cronjobs?limit=500&continue=x"),
            "/apis/batch/v1/cronjobs");
  EXPECT_EQ(UrlPathForMessages("https://user:pw@h"), "/");
  EXPECT_EQ(UrlPathForMessages("http://[::1]:80/a/b"), "/a/b");
}

TEST(HttpClientHelpersTest, UrlEncodeKeepsUnreservedCharactersOnly) {
  EXPECT_EQ(UrlEncode("schedwatch.io/role"), "schedwatch.io%2Frole");
  EXPECT_EQ(UrlEncode("a b+c=d&e~_-"), "a%20b%2Bc%3Dd%26e~_-");
  EXPECT_EQ(UrlEncode(""), "");
}

}  // namespace
}  // namespace schedwatch
