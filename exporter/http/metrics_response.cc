#include "exporter/http/metrics_response.h"

namespace schedwatch {
namespace {

// What MHD copies from at most at once: its buffer comes from the connection's memory pool.
constexpr std::size_t kBlockBytes = 32 * 1024;

struct MetricsBody {
  MetricsBody(std::shared_ptr<const ChunkedText> held, std::string_view tail, bool gzip)
      : text(std::move(held)), reader(*text, tail, gzip) {}
  std::shared_ptr<const ChunkedText> text;
  ChunkedTextReader reader;
};

ssize_t ReadBody(void* held, std::uint64_t /*position: reads come in order*/, char* out,
                 std::size_t capacity) {
  auto* body = static_cast<MetricsBody*>(held);
  std::ptrdiff_t count = body->reader.Read(out, capacity);
  if (count > 0) return count;
  // Nothing left before the promised length is an error too: cut the connection.
  return MHD_CONTENT_READER_END_WITH_ERROR;
}

}  // namespace

MHD_Response* CreateMetricsResponse(std::shared_ptr<const ChunkedText> text,
                                    std::string_view scraped_lines, bool accepts_gzip,
                                    bool* gzipped) {
  auto body = std::make_unique<MetricsBody>(text, scraped_lines, accepts_gzip);
  if (!body->reader.ok() && body->reader.gzip()) {
    body = std::make_unique<MetricsBody>(text, scraped_lines, false);  // zlib failed: plain
  }
  if (!body->reader.ok()) return nullptr;
  *gzipped = body->reader.gzip();
  MHD_Response* response =
      MHD_create_response_from_callback(body->reader.size(), kBlockBytes, &ReadBody, body.get(),
                                        [](void* held) { delete static_cast<MetricsBody*>(held); });
  if (response != nullptr) body.release();  // the response owns it now
  return response;
}

}  // namespace schedwatch
