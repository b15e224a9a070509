// The /metrics answer served by a real libmicrohttpd daemon in the exporter's polling mode
// (internal thread, epoll), read by libcurl as Prometheus reads it.
#include "exporter/http/metrics_response.h"

#include <curl/curl.h>
#include <gtest/gtest.h>
#include <microhttpd.h>

#include <string>
#include <vector>

#include "tests/exporter/exposition/gunzip.h"

namespace schedwatch {
namespace {

using testing::Gunzip;

struct Served {
  std::shared_ptr<const ChunkedText> text;
  std::string tail;
};

MHD_Result Answer(void* cls, MHD_Connection* connection, const char*, const char*, const char*,
                  const char*, std::size_t*, void** request) {
  if (*request == nullptr) {  // headers only so far
    *request = connection;
    return MHD_YES;
  }
  auto* served = static_cast<Served*>(cls);
  const char* encoding =
      MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING);
  bool gzip = false;
  MHD_Response* response =
      CreateMetricsResponse(served->text, served->tail, encoding != nullptr, &gzip);
  if (response == nullptr) return MHD_NO;
  if (gzip) MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
  MHD_Result queued = MHD_queue_response(connection, MHD_HTTP_OK, response);
  MHD_destroy_response(response);
  return queued;
}

std::size_t Append(char* data, std::size_t size, std::size_t count, void* out) {
  static_cast<std::string*>(out)->append(data, size * count);
  return size * count;
}

struct Fetched {
  CURLcode code = CURLE_OK;
  std::string body;
  curl_off_t content_length = -1;
};

// Raw bytes, not decoded: what the headers promised is what must arrive.
Fetched Fetch(unsigned port, bool gzip) {
  Fetched fetched;
  CURL* curl = curl_easy_init();
  std::string url = "http://127.0.0.1:" + std::to_string(port) + "/metrics";
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &Append);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &fetched.body);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, 10L);  // the stall waited for the idle timeout
  curl_slist* headers = nullptr;
  if (gzip) headers = curl_slist_append(headers, "Accept-Encoding: gzip");
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  fetched.code = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &fetched.content_length);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  return fetched;
}

class MetricsResponseTest : public ::testing::Test {
 protected:
  void Serve(std::size_t lines, ChunkBounds bounds) {
    ChunkedTextWriter writer(nullptr, bounds);
    for (std::size_t i = 0; i < lines; ++i) {
      std::string line =
          "schedwatch_job_registered{role=\"role-" + std::to_string(i) + "\",source=\"cron\"} 1\n";
      writer.buffer() += line;
      text_ += line;
      writer.EndOfLine();
    }
    served_.text = std::make_shared<ChunkedText>(writer.Finish());
    served_.tail = "process_open_fds 9\n";
    daemon_ = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, 0, nullptr, nullptr,
                               &Answer, &served_, MHD_OPTION_CONNECTION_TIMEOUT,
                               static_cast<unsigned>(30), MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                               static_cast<std::size_t>(32 * 1024), MHD_OPTION_END);
    ASSERT_NE(daemon_, nullptr);
    port_ = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_BIND_PORT)->port;
  }
  void TearDown() override {
    if (daemon_ != nullptr) MHD_stop_daemon(daemon_);
  }

  Served served_;
  std::string text_;
  MHD_Daemon* daemon_ = nullptr;
  unsigned port_ = 0;
};

// More chunks than IOV_MAX, each small enough that the first 1,024 fit the socket's buffer at
// once: an answer of one iovec part per chunk sent exactly those and then nothing.
TEST_F(MetricsResponseTest, AnswersOfMoreChunksThanIovMaxArriveWhole) {
  Serve(1500, ChunkBounds{1, 1});
  ASSERT_EQ(served_.text->chunks().size(), 1500u);
  for (int scrape = 0; scrape < 3; ++scrape) {
    Fetched gzip = Fetch(port_, true);
    ASSERT_EQ(gzip.code, CURLE_OK) << curl_easy_strerror(gzip.code);
    EXPECT_EQ(static_cast<std::size_t>(gzip.content_length), gzip.body.size());
    EXPECT_EQ(Gunzip(gzip.body), text_ + served_.tail);

    Fetched plain = Fetch(port_, false);
    ASSERT_EQ(plain.code, CURLE_OK) << curl_easy_strerror(plain.code);
    EXPECT_EQ(static_cast<std::size_t>(plain.content_length), plain.body.size());
    EXPECT_EQ(plain.body, text_ + served_.tail);
  }
}

// Chunks of the real size, a body many times the server's buffer.
TEST_F(MetricsResponseTest, LargeAnswersArriveWholeInBothForms) {
  Serve(200000, ChunkBounds{});
  ASSERT_GT(served_.text->chunks().size(), 10u);
  Fetched gzip = Fetch(port_, true);
  ASSERT_EQ(gzip.code, CURLE_OK) << curl_easy_strerror(gzip.code);
  EXPECT_EQ(Gunzip(gzip.body), text_ + served_.tail);
  Fetched plain = Fetch(port_, false);
  ASSERT_EQ(plain.code, CURLE_OK) << curl_easy_strerror(plain.code);
  EXPECT_EQ(plain.body.size(), text_.size() + served_.tail.size());
  EXPECT_TRUE(plain.body == text_ + served_.tail);
}

}  // namespace
}  // namespace schedwatch
