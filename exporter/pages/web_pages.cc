#include "exporter/pages/web_pages.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "schedwatch/metrics.h"

namespace schedwatch {
namespace {

// A page grows by pieces of its size so far, from 64 KiB to 1 MiB: a small page is charged
// little, a big one in few pieces.
constexpr std::size_t kFirstPiece = 64 * 1024;
constexpr std::size_t kLargestPiece = 1024 * 1024;
// A row's bytes until a page of the kind was measured: the overview's are about 1.8 KB.
constexpr std::size_t kDefaultRowBytes = 2048;
constexpr std::size_t kRowsMeasured = 64;  // fewer: the fixed part would count as rows

}  // namespace

std::string PageBytes::Text() const {
  std::string text;
  for (const auto& piece : pieces) text += piece;
  return text;
}

PageCache::PageCache(std::size_t max_bytes)
    : max_bytes_(max_bytes), counter_(std::make_shared<Counter>()) {}

void PageCache::ForgetOlder(const std::shared_ptr<const Published>& published) {
  if (for_.lock() == published) return;  // the pages of one refresh at a time
  for_ = published;
  pages_.clear();
  uses_.clear();
}

std::size_t PageCache::Estimate(const Key& key) {
  auto measured = row_bytes_.find(key.kind);
  std::size_t per_row = measured == row_bytes_.end() ? kDefaultRowBytes : measured->second;
  return kFirstPiece + key.roles.size() * per_row;
}

bool PageCache::MakeRoom(std::size_t bytes, std::size_t own) {
  for (;;) {
    std::size_t held = counter_->bytes.load();
    if (held + bytes <= max_bytes_ || held <= own) return true;  // fits, or alone
    auto unread = std::find_if(uses_.begin(), uses_.end(), [this](const Key& key) {
      // Only the cache holds it; answers only let go of bodies meanwhile.
      const Body& body = pages_.at(key).body;
      return body && body.use_count() == 1;
    });
    if (unread == uses_.end()) return false;
    pages_.erase(*unread);  // its bytes are given back here
    uses_.erase(unread);
  }
}

bool PageCache::Charge(std::size_t bytes, std::size_t own) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!MakeRoom(bytes, own)) return false;
  counter_->bytes.fetch_add(bytes);
  return true;
}

PageCache::Body PageCache::Get(const std::shared_ptr<const Published>& published, const Key& key,
                               const std::function<bool(const PageSink&)>& render) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ForgetOlder(published);
    auto found = pages_.find(key);
    if (found != pages_.end()) {
      if (Body body = found->second.read.lock()) {
        uses_.splice(uses_.end(), uses_, found->second.use);
        cached_.fetch_add(1);
        return body;
      }
      uses_.erase(found->second.use);  // a page bigger than the budget, sent to all its readers
      pages_.erase(found);
    }
    // Refused up front rather than after rendering most of it.
    if (!MakeRoom(Estimate(key), 0)) {
      refused_.fetch_add(1);
      return nullptr;
    }
  }
  // The pieces made so far, charged until they are handed to the body (or dropped).
  struct Writing {
    std::shared_ptr<Counter> counter;
    std::unique_ptr<PageBytes> bytes = std::make_unique<PageBytes>();
    std::size_t charged = 0, room = 0;  // room: bytes left in the last piece
    ~Writing() {
      if (bytes) counter->bytes.fetch_sub(charged);
    }
  } writing{counter_};
  PageSink sink = [this, &writing](std::string_view text) {
    PageBytes& bytes = *writing.bytes;
    while (!text.empty()) {
      if (writing.room == 0) {
        std::size_t piece = std::clamp(bytes.size, kFirstPiece, kLargestPiece);
        if (!Charge(piece, writing.charged)) return false;
        writing.charged += piece;
        bytes.pieces.emplace_back().reserve(piece);
        writing.room = piece;
      }
      std::size_t take = std::min(text.size(), writing.room);
      bytes.pieces.back().append(text.data(), take);
      text.remove_prefix(take);
      writing.room -= take;
      bytes.size += take;
    }
    return true;
  };
  if (!render(sink)) {
    refused_.fetch_add(1);
    return nullptr;
  }
  rendered_.fetch_add(1);
  std::size_t charged = writing.charged;
  Body body(writing.bytes.release(), [counter = counter_, charged](const PageBytes* bytes) {
    counter->bytes.fetch_sub(charged);
    delete bytes;
  });
  std::lock_guard<std::mutex> lock(mutex_);
  if (key.roles.size() >= kRowsMeasured) row_bytes_[key.kind] = body->size / key.roles.size();
  if (for_.lock() == published) {  // not when a newer refresh came meanwhile
    auto forget = [this](std::map<Key, Entry>::iterator it) {
      uses_.erase(it->second.use);
      return pages_.erase(it);
    };
    if (auto old = pages_.find(key); old != pages_.end()) forget(old);
    // Keys of big pages sent to all their readers go, and their role lists (up to 400 KB) too.
    for (auto it = pages_.begin(); it != pages_.end();) {
      it = !it->second.body && it->second.read.expired() ? forget(it) : std::next(it);
    }
    uses_.push_back(key);
    pages_[key] = Entry{charged > max_bytes_ ? nullptr : body, body, std::prev(uses_.end())};
  }
  return body;
}

void RenderPageMetrics(const PageCache::Counts& counts, const ExpositionForm& form,
                       std::string& out) {
  const metrics::Metric& metric = metrics::kStatusPages;
  AppendHeader(out, metric, form);
  const std::string created = CreatedName(metric);
  using Sample = std::pair<const char*, std::uint64_t>;
  for (const Sample& sample : {Sample{"cached", counts.cached}, Sample{"refused", counts.refused},
                               Sample{"rendered", counts.rendered}}) {
    fmt::format_to(std::back_inserter(out), "{}{{outcome=\"{}\"}} {}\n", metric.name, sample.first,
                   sample.second);
    if (form.open_metrics) {
      fmt::format_to(std::back_inserter(out), "{}{{outcome=\"{}\"}} {}\n", created, sample.first,
                     form.counting_since);
    }
  }
}

}  // namespace schedwatch
