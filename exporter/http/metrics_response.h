// A /metrics answer: the exposition a refresh published, then the lines a scrape reads itself
// (process_*), as gzip when the client takes it.
#pragma once

#include <microhttpd.h>

#include <memory>
#include <string_view>

#include "exporter/exposition/chunked_text.h"

namespace schedwatch {

// The body is read into the server's buffer piece by piece from the published chunks, which the
// answer keeps alive until it is sent. Never one iovec part per chunk: libmicrohttpd 0.9.75
// stops an epoll connection for good once one sendmsg has sent IOV_MAX (1024) whole parts of a
// longer vector (it waits for a writable edge that never comes), and at 100,000 roles the
// exposition is about 1,800 chunks. Null when the answer cannot be made; `gzipped` says which
// form it is.
MHD_Response* CreateMetricsResponse(std::shared_ptr<const ChunkedText> text,
                                    std::string_view scraped_lines, bool accepts_gzip,
                                    bool* gzipped);

}  // namespace schedwatch
