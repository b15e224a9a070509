#include "schedwatch/interned_text.h"

#include <mutex>
#include <set>

namespace schedwatch {
namespace {

// Node-based: a text's copy never moves. Reached under the lock: specs load on several threads
// (the exporter's reload, its tests).
std::mutex& PoolMutex() {
  static std::mutex mutex;
  return mutex;
}

std::set<std::string, std::less<>>& Pool() {
  static auto* texts = new std::set<std::string, std::less<>>();
  return *texts;
}

const std::string* Intern(std::string_view text) {
  std::lock_guard<std::mutex> lock(PoolMutex());
  auto it = Pool().find(text);
  if (it == Pool().end()) it = Pool().emplace(text).first;
  return &*it;
}

}  // namespace

std::size_t InternedText::PoolSize() {
  std::lock_guard<std::mutex> lock(PoolMutex());
  return Pool().size();
}

InternedText::InternedText() : text_(Intern("")) {}

InternedText::InternedText(std::string_view text) : text_(Intern(text)) {}

}  // namespace schedwatch
