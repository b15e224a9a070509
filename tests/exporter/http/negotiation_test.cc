// /metrics content negotiation, against what client_golang's expfmt.NegotiateIncludingOpenMetrics
// answers for the same Accept headers.
#include <gtest/gtest.h>

#include <string>

#include "exporter/http/web.h"

namespace schedwatch {
namespace {

// What Prometheus 2.42 sends with every scrape.
constexpr const char* kPrometheus242 =
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
    "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

TEST(NegotiationTest, PrometheusGetsOpenMetrics100) {
  EXPECT_EQ(NegotiateExposition(kPrometheus242), kOpenMetricsContentType);
}

TEST(NegotiationTest, TextWhenNothingAsksForOpenMetrics) {
  for (const char* accept : {"", "*/*", "text/plain", "text/plain;version=0.0.4", "garbage",
                             ";;;,,,", "text/*", "application/json", "text/html,*/*;q=0.8"}) {
    EXPECT_EQ(NegotiateExposition(accept), kTextContentType) << accept;
  }
  EXPECT_EQ(NegotiateExposition(nullptr), kTextContentType);
}

TEST(NegotiationTest, OpenMetricsVersions) {
  EXPECT_EQ(NegotiateExposition("application/openmetrics-text"), kOpenMetrics001ContentType);
  EXPECT_EQ(NegotiateExposition("application/openmetrics-text; version=0.0.1"),
            kOpenMetrics001ContentType);
  EXPECT_EQ(NegotiateExposition("Application/OpenMetrics-Text; Version=1.0.0; charset=utf-8"),
            kOpenMetricsContentType);
  // A version neither form is: skipped, as client_golang does.
  EXPECT_EQ(NegotiateExposition("application/openmetrics-text;version=2.0.0"), kTextContentType);
  EXPECT_EQ(NegotiateExposition("text/plain;version=1.0.0"), kTextContentType);
}

TEST(NegotiationTest, QualitiesDecide) {
  EXPECT_EQ(
      NegotiateExposition("text/plain;q=0.5,application/openmetrics-text;version=1.0.0;q=0.6"),
      kOpenMetricsContentType);
  EXPECT_EQ(
      NegotiateExposition("application/openmetrics-text;version=1.0.0;q=0.4,text/plain;q=0.5"),
      kTextContentType);
  // Equal qualities: the first named.
  EXPECT_EQ(NegotiateExposition("text/plain,application/openmetrics-text;version=1.0.0"),
            kTextContentType);
  EXPECT_EQ(NegotiateExposition("application/openmetrics-text;version=1.0.0,text/plain"),
            kOpenMetricsContentType);
  // A form we do not serve (protobuf) is passed over for the next one.
  EXPECT_EQ(NegotiateExposition("application/vnd.google.protobuf;proto=io.prometheus.client."
                                "MetricFamily;encoding=delimited,application/openmetrics-text;"
                                "version=1.0.0;q=0.9,text/plain;q=0.8"),
            kOpenMetricsContentType);
}

TEST(NegotiationTest, RefusedAndBrokenQualities) {
  // q=0 refuses (RFC 9110); goautoneg would still pick it last.
  EXPECT_EQ(NegotiateExposition("application/openmetrics-text;version=1.0.0;q=0"),
            kTextContentType);
  for (const char* q : {"abc", "2", "-1", "", "0.5x", "nan"}) {
    std::string accept = std::string("application/openmetrics-text;version=1.0.0;q=") + q;
    EXPECT_EQ(NegotiateExposition(accept.c_str()), kTextContentType) << accept;
  }
}

TEST(NegotiationTest, HugeHeaderWithManyQualities) {
  std::string accept;
  for (int i = 0; i < 20000; ++i) accept += "x/y" + std::to_string(i) + ";q=0.9;a=b,";
  accept += "application/openmetrics-text;version=1.0.0;q=0.95," + std::string(10000, ';') +
            std::string(10000, ',') + "text/plain;q=1e-3";
  EXPECT_EQ(NegotiateExposition(accept.c_str()), kOpenMetricsContentType);
}

}  // namespace
}  // namespace schedwatch
