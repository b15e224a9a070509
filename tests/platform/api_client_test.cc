// The API client's one retry policy over an in-process transport and a fake clock: what is
// retried, how long it waits (backoff, Retry-After), when it stops (attempts, deadline,
// cancellation), what it reports, and the headers it sends.
#include "schedwatch/platform/api_client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <limits>
#include <thread>

namespace schedwatch::platform {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr const char* kToken = "api-token-0123456789";

// Answers in order; a status of 0 is a transport failure of kind `failure`.
struct FakeTransport {
  struct Answer {
    long status = 200;
    std::string body;
    std::map<std::string, std::string> headers;
    HttpFailure failure = HttpFailure::kNone;
  };
  std::deque<Answer> answers;
  std::vector<HttpRequest> requests;
  std::atomic<int> sent{0};  // for another thread to watch: `requests` is the sender's

  HttpTransport Transport() {
    return [this](const HttpRequest& request, const std::atomic<bool>*,
                  HttpFailure* failure) -> Result<HttpResponse> {
      requests.push_back(request);
      ++sent;
      Answer answer = answers.empty() ? Answer{} : answers.front();
      if (!answers.empty()) answers.pop_front();
      if (answer.failure != HttpFailure::kNone) {
        *failure = answer.failure;
        return Error{request.method + " " + UrlPathForMessages(request.url) + ": refused"};
      }
      *failure = HttpFailure::kNone;
      HttpResponse response;
      response.status = answer.status;
      response.body = answer.body;
      response.headers = answer.headers;
      return response;
    };
  }
};

class ApiClientTest : public ::testing::Test {
 protected:
  ApiClientTest() { policy_.first_backoff = milliseconds(200); }

  ApiClient Client() {
    ApiClient client(fake_.Transport(), policy_, ApiHeaders(), clock_);
    client.SetToken(kToken);
    return client;
  }
  Result<HttpResponse> Send(ApiClient& client, Clock::Duration budget = seconds(60)) {
    ApiCall call;
    call.url = "https://api.test/v1/things?page=2";
    return client.Send(call, clock_.Now() + budget, &cancelled_);
  }

  RetryPolicy policy_;
  FakeTransport fake_;
  FakeClock clock_;
  std::atomic<bool> cancelled_{false};
};

TEST_F(ApiClientTest, ServerErrorsAreRetriedWithDoublingBackoffAndCountedWhenRecovered) {
  fake_.answers = {{503, "etcd", {}}, {502, "", {}}, {200, "ok", {}}};
  auto client = Client();
  auto response = Send(client);
  ASSERT_TRUE(response.ok()) << response.error();
  EXPECT_EQ(response->body, "ok");
  EXPECT_EQ(fake_.requests.size(), 3u);
  EXPECT_EQ(clock_.sleeps(), (std::vector<Clock::Duration>{milliseconds(200), milliseconds(400)}));
  auto recovered = client.TakeRecovered();
  ASSERT_EQ(recovered.size(), 2u);
  EXPECT_EQ(recovered[0].cause, RetryCause::kServerError);
  EXPECT_EQ(recovered[0].message, "GET /v1/things: HTTP 503; retrying");
  EXPECT_TRUE(client.TakeRecovered().empty()) << "taken once";
  EXPECT_EQ(client.requests(), 3);
}

TEST_F(ApiClientTest, TheBackoffIsCapped) {
  policy_.max_attempts = 6;
  policy_.max_backoff = milliseconds(1000);
  fake_.answers = {{500, "", {}}, {500, "", {}}, {500, "", {}}, {500, "", {}}, {500, "", {}}};
  auto client = Client();
  ASSERT_TRUE(Send(client).ok());
  EXPECT_EQ(clock_.sleeps(),
            (std::vector<Clock::Duration>{milliseconds(200), milliseconds(400), milliseconds(800),
                                          milliseconds(1000), milliseconds(1000)}));
}

TEST_F(ApiClientTest, AttemptsAreBoundedAndTheLastErrorSaysSo) {
  fake_.answers = {{503, "", {}}, {503, "", {}}, {503, "", {}}, {200, "", {}}};
  auto client = Client();
  auto response = Send(client);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error(), "GET /v1/things: HTTP 503 (gave up after 3 attempts)");
  EXPECT_EQ(fake_.requests.size(), 3u);
}

TEST_F(ApiClientTest, RetryAfterSecondsIsHonoured) {
  fake_.answers = {{429, "", {{"retry-after", "7"}}}, {200, "", {}}};
  auto client = Client();
  ASSERT_TRUE(Send(client).ok());
  EXPECT_EQ(clock_.sleeps(), std::vector<Clock::Duration>{seconds(7)});
  auto recovered = client.TakeRecovered();
  ASSERT_EQ(recovered.size(), 1u);
  EXPECT_EQ(recovered[0].cause, RetryCause::kRateLimited);
}

TEST_F(ApiClientTest, RetryAfterAsAnHttpDateIsHonouredOnA5xxToo) {
  // 30 s after the fake clock's wall time, 2025-11-30T12:00:00Z.
  ASSERT_EQ(clock_.UnixSeconds(), 1764504000);
  fake_.answers = {
      {503, "", {{"retry-after", "Sun, 30 Nov 2025 12:00:30 GMT"}}}, {500, "", {}}, {200, "", {}}};
  auto client = Client();
  ASSERT_TRUE(Send(client).ok());
  // The 503's Retry-After, then the 500's own backoff (its second attempt's).
  EXPECT_EQ(clock_.sleeps(), (std::vector<Clock::Duration>{seconds(30), milliseconds(400)}));
}

TEST_F(ApiClientTest, ARateLimitWithoutRetryAfterWaitsTheDefault) {
  fake_.answers = {{429, "", {{"retry-after", "soon"}}}, {200, "", {}}};
  auto client = Client();
  ASSERT_TRUE(Send(client).ok());
  EXPECT_EQ(clock_.sleeps(), std::vector<Clock::Duration>{seconds(1)});
}

TEST_F(ApiClientTest, RetryAfterIsCapped) {
  policy_.max_retry_after = seconds(20);
  fake_.answers = {{429, "", {{"retry-after", "3600"}}}, {200, "", {}}};
  auto client = Client();
  ASSERT_TRUE(Send(client, std::chrono::hours(2)).ok());
  EXPECT_EQ(clock_.sleeps(), std::vector<Clock::Duration>{seconds(20)});
}

TEST_F(ApiClientTest, ARetryAfterBeyondTheDeadlineFailsAtOnce) {
  fake_.answers = {{429, R"({"message":"slow down"})", {{"retry-after", "30"}}}};
  auto client = Client();
  auto response = Send(client, seconds(3));
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error(), "GET /v1/things: HTTP 429 (Retry-After 30s is beyond the timeout)");
  EXPECT_TRUE(clock_.sleeps().empty());
}

TEST_F(ApiClientTest, TheDeadlineStopsRetries) {
  policy_.first_backoff = seconds(2);
  fake_.answers = {{503, "", {}}, {200, "", {}}};
  auto client = Client();
  auto response = Send(client, seconds(1));
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error(), "GET /v1/things: HTTP 503 (no time left to retry)");
  EXPECT_EQ(fake_.requests.size(), 1u);
  EXPECT_TRUE(clock_.sleeps().empty());
  // Each attempt's timeout is within what is left.
  EXPECT_LE(fake_.requests[0].timeout, milliseconds(1000));
}

TEST_F(ApiClientTest, CancellationStopsABackoffAtOnce) {
  fake_.answers = {{503, "", {}}, {200, "", {}}};
  clock_.set_on_sleep([this](Clock::Duration) { cancelled_ = true; });
  auto client = Client();
  auto response = Send(client);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error(), "GET /v1/things: cancelled");
  EXPECT_EQ(fake_.requests.size(), 1u);
}

TEST_F(ApiClientTest, CancellationStopsARealBackoffWithinMilliseconds) {
  policy_.first_backoff = seconds(30);
  fake_.answers = {{503, "", {}}, {200, "", {}}};
  ApiClient client(fake_.Transport(), policy_);  // the real clock
  std::thread canceller([this] {
    while (fake_.sent == 0) std::this_thread::yield();
    cancelled_ = true;
  });
  auto start = std::chrono::steady_clock::now();
  ApiCall call;
  call.url = "https://api.test/v1/things";
  auto response = client.Send(call, std::chrono::steady_clock::now() + seconds(60), &cancelled_);
  canceller.join();
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error(), "GET /v1/things: cancelled");
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(5));
}

TEST_F(ApiClientTest, TransportFailuresAreRetriedUnlessRetryingCannotHelp) {
  fake_.answers = {{0, "", {}, HttpFailure::kConnect}, {0, "", {}, HttpFailure::kTimeout}, {}};
  auto client = Client();
  ASSERT_TRUE(Send(client).ok());
  auto recovered = client.TakeRecovered();
  ASSERT_EQ(recovered.size(), 2u);
  EXPECT_EQ(recovered[0].cause, RetryCause::kTransport);
  EXPECT_EQ(recovered[0].message, "GET /v1/things: refused; retrying");

  for (auto failure : {HttpFailure::kTls, HttpFailure::kTooLarge, HttpFailure::kCancelled}) {
    fake_.requests.clear();
    fake_.answers = {{0, "", {}, failure}, {}};
    auto once = Client();
    EXPECT_FALSE(Send(once).ok());
    EXPECT_EQ(fake_.requests.size(), 1u);
  }
}

TEST_F(ApiClientTest, OtherAnswersAreTheCallersAndNotRetried) {
  for (long status : {201L, 304L, 404L, 409L, 410L}) {
    fake_.requests.clear();
    fake_.answers = {{status, "", {}}};
    auto client = Client();
    auto response = Send(client);
    ASSERT_TRUE(response.ok()) << response.error();
    EXPECT_EQ(response->status, status);
    EXPECT_EQ(fake_.requests.size(), 1u);
  }
  // Without retry_rate_limited a 429 is the caller's too (GitHub's quota).
  policy_.retry_rate_limited = false;
  fake_.answers = {{429, "", {{"retry-after", "1"}}}};
  auto client = Client();
  auto response = Send(client);
  ASSERT_TRUE(response.ok());
  EXPECT_EQ(response->status, 429);
}

TEST_F(ApiClientTest, AnAnswerTheCallerFindsMalformedIsRetried) {
  fake_.answers = {{200, "{\"kind\":\"Cron", {}}, {200, "{}", {}}};
  auto client = Client();
  ApiCall call;
  call.url = "https://api.test/v1/things";
  call.check = [](const HttpResponse& response) -> Result<bool> {
    if (response.body != "{}") return Error{"malformed JSON"};
    return true;
  };
  auto response = client.Send(call, clock_.Now() + seconds(60), nullptr);
  ASSERT_TRUE(response.ok());
  auto recovered = client.TakeRecovered();
  ASSERT_EQ(recovered.size(), 1u);
  EXPECT_EQ(recovered[0].cause, RetryCause::kMalformed);
  EXPECT_EQ(recovered[0].message, "GET /v1/things: malformed JSON; retrying");
}

TEST_F(ApiClientTest, DefaultHeadersAndTheTokenRedactedFromMessages) {
  fake_.answers = {{503, std::string("token ") + kToken + " refused", {}}, {500, "", {}}};
  policy_.max_attempts = 2;
  auto client = Client();
  ApiCall call;
  call.url = "https://api.test/v1/things";
  call.accept = "application/vnd.github+json";
  call.describe = [](const HttpResponse& response) { return "said: " + response.body; };
  auto first = client.Send(call, clock_.Now() + seconds(60), nullptr);
  ASSERT_FALSE(first.ok());
  auto recovered = client.TakeRecovered();
  ASSERT_EQ(recovered.size(), 1u);
  EXPECT_EQ(recovered[0].message, "GET /v1/things: said: token [redacted] refused; retrying");
  std::map<std::string, std::string> headers(fake_.requests[0].headers.begin(),
                                             fake_.requests[0].headers.end());
  EXPECT_EQ(headers["Authorization"], std::string("Bearer ") + kToken);
  EXPECT_EQ(headers["Accept"], "application/vnd.github+json");
  EXPECT_EQ(headers["User-Agent"].rfind("schedwatch/", 0), 0u);
  EXPECT_EQ(fake_.requests[0].headers.size(), 3u) << "one of each";
  EXPECT_EQ(DefaultHeaders(ApiHeaders(), "").size(), 2u) << "no Authorization without a token";
}

TEST(ParseRetryAfterTest, SecondsAndTheThreeHttpDateForms) {
  const std::int64_t now = 1445412480;  // 2015-10-21T07:28:00Z
  EXPECT_EQ(ParseRetryAfter("120", now), seconds(120));
  EXPECT_EQ(ParseRetryAfter(" 5 ", now), seconds(5));
  EXPECT_EQ(ParseRetryAfter("0", now), seconds(0));
  EXPECT_EQ(ParseRetryAfter("Wed, 21 Oct 2015 07:28:30 GMT", now), seconds(30));
  EXPECT_EQ(ParseRetryAfter("Wednesday, 21-Oct-15 07:29:00 GMT", now), seconds(60));
  EXPECT_EQ(ParseRetryAfter("Wed Oct 21 07:28:10 2015", now), seconds(10));
  EXPECT_EQ(ParseRetryAfter("Wed, 21 Oct 2015 07:00:00 GMT", now), seconds(0)) << "past: now";
  EXPECT_EQ(ParseRetryAfter("", now), std::nullopt);
  EXPECT_EQ(ParseRetryAfter("-5", now), std::nullopt);
  EXPECT_EQ(ParseRetryAfter("soon", now), std::nullopt);
  EXPECT_EQ(ParseRetryAfter("1.5", now), std::nullopt);
  EXPECT_EQ(ParseRetryAfter(std::string(100, '9'), now), std::nullopt);
  EXPECT_GE(ParseRetryAfter("99999999999999", now).value(), seconds(600)) << "capped by the caller";
}

// What a server says to wait until is bounded by the policy, whatever its number.
TEST(BoundedRetryAtTest, NeverBeyondMaxWaitNeverBeforeNow) {
  const std::int64_t now = 1796040000;
  bool capped = true;
  EXPECT_EQ(BoundedRetryAt(now + 30, now, seconds(600), &capped), now + 30);
  EXPECT_FALSE(capped);
  EXPECT_EQ(BoundedRetryAt(now - 30, now, seconds(600), &capped), now) << "past: now";
  EXPECT_FALSE(capped);
  EXPECT_EQ(BoundedRetryAt(now + 1000000000000, now, seconds(3600), &capped), now + 3600);
  EXPECT_TRUE(capped);
  EXPECT_EQ(BoundedRetryAt(999999999999999999, now, seconds(3600)), now + 3600);
  EXPECT_EQ(BoundedRetryAt(std::numeric_limits<std::int64_t>::max(), now, seconds(3600)),
            now + 3600);
  EXPECT_EQ(BoundedRetryAt(std::numeric_limits<std::int64_t>::min(), now, seconds(3600)), now);
  EXPECT_EQ(BoundedRetryAt(now + 600, now, seconds(600), &capped), now + 600);
  EXPECT_FALSE(capped);
}

}  // namespace
}  // namespace schedwatch::platform
