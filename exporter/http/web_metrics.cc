// /metrics: the form and coding a scrape asks for, and its answer from the published chunks.
#include <algorithm>
#include <string_view>

#include "exporter/exposition/process_metrics.h"
#include "exporter/http/metrics_response.h"
#include "exporter/http/web_server.h"
#include "exporter/http/web_text.h"

namespace schedwatch {

namespace {

// An element's quality, 1 unless a `q=` parameter says otherwise; 0 when that is not a number
// from 0 to 1.
double Quality(const std::vector<std::string>& parameters) {
  double q = 1;
  for (std::size_t i = 1; i < parameters.size(); ++i) {
    std::string parameter = Lower(parameters[i]);
    if (parameter.rfind("q=", 0) != 0) continue;
    char* end = nullptr;
    q = std::strtod(parameter.c_str() + 2, &end);
    if (end == parameter.c_str() + 2 || *end != '\0' || !(q >= 0 && q <= 1)) q = 0;
  }
  return q;
}

}  // namespace

// RFC 9110 section 12.5.3: "gzip;q=0" refuses gzip; "*" stands for every coding not named.
bool AcceptsGzip(const char* accept_encoding) {
  if (accept_encoding == nullptr) return false;
  std::optional<double> gzip, any;
  for (const auto& element : Split(accept_encoding, ',')) {
    auto parameters = Split(element, ';');
    if (parameters.empty()) continue;
    std::string coding = Lower(parameters[0]);
    double q = Quality(parameters);
    if (coding == "gzip" || coding == "x-gzip") {
      gzip = q;
    } else if (coding == "*") {
      any = q;
    }
  }
  if (gzip) return *gzip > 0;
  return any && *any > 0;
}

// As client_golang's expfmt.NegotiateIncludingOpenMetrics: the media ranges by quality, the
// named before wildcards, and the first that is text 0.0.4 or OpenMetrics (1.0.0, 0.0.1 or no
// version) wins; text when none is. Unlike goautoneg, q=0 refuses (RFC 9110) and equal ranges
// keep their order.
std::string_view NegotiateExposition(const char* accept) {
  if (accept == nullptr) return kTextContentType;
  struct Range {
    double q;
    int specificity;  // 2: type/subtype, 1: type/*, 0: */*
    std::string_view content_type;
  };
  std::vector<Range> ranges;
  for (const auto& element : Split(accept, ',')) {
    auto parameters = Split(element, ';');
    if (parameters.empty()) continue;
    std::string media = Lower(parameters[0]);
    std::string version;
    for (std::size_t i = 1; i < parameters.size(); ++i) {
      std::string parameter = Lower(parameters[i]);
      if (parameter.rfind("version=", 0) == 0) version = Trim(parameter.substr(8));
    }
    double q = Quality(parameters);
    if (q <= 0) continue;
    int specificity = media == "*/*"                                                      ? 0
                      : media.size() > 2 && media.compare(media.size() - 2, 2, "/*") == 0 ? 1
                                                                                          : 2;
    std::string_view type;  // empty: a range that names neither form
    if (media == "text/plain" && (version.empty() || version == "0.0.4")) {
      type = kTextContentType;
    } else if (media == "application/openmetrics-text" && version == "1.0.0") {
      type = kOpenMetricsContentType;
    } else if (media == "application/openmetrics-text" && (version.empty() || version == "0.0.1")) {
      type = kOpenMetrics001ContentType;
    }
    ranges.push_back({q, specificity, type});
  }
  std::stable_sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) {
    return a.q != b.q ? a.q > b.q : a.specificity > b.specificity;
  });
  for (const Range& range : ranges) {
    if (!range.content_type.empty()) return range.content_type;
  }
  return kTextContentType;
}

MHD_Result WebServer::Impl::ServeMetrics(MHD_Connection* connection) {
  // A copy of the chunk list, not the refresh: a slow reader then holds chunks that later
  // refreshes mostly share, never a whole RefreshResult per refresh it outlives.
  std::string_view type = NegotiateExposition(Header(connection, MHD_HTTP_HEADER_ACCEPT));
  std::shared_ptr<const Published> current = refresher_.Current();
  ExpositionForm form{type != kTextContentType, current->counting_since};
  auto text = std::make_shared<const ChunkedText>(form.open_metrics ? current->openmetrics
                                                                    : current->metrics);
  current.reset();
  std::string process;  // and the page counters: what the scrape reads itself
  RenderPageMetrics(page_cache_->counts(), form, process);
  RenderRateLimitMetrics(limiter_ ? limiter_->limited() : 0, form, process);
  if (auto stats = ReadProcessStats()) RenderProcessMetrics(*stats, form, process);
  if (form.open_metrics) process += "# EOF\n";
  bool gzip = false;
  MHD_Response* response = CreateMetricsResponse(
      std::move(text), process, AcceptsGzip(Header(connection, MHD_HTTP_HEADER_ACCEPT_ENCODING)),
      &gzip);
  if (response == nullptr) return MHD_NO;
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, std::string(type).c_str());
  MHD_add_response_header(response, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  MHD_add_response_header(response, MHD_HTTP_HEADER_VARY, "Accept, Accept-Encoding");
  if (gzip) MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
  AddConfiguredHeaders(response);
  MHD_Result queued = MHD_queue_response(connection, MHD_HTTP_OK, response);
  MHD_destroy_response(response);
  return queued;
}

}  // namespace schedwatch
