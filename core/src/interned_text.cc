#include "schedwatch/interned_text.h"

#include <mutex>
#include <set>

namespace schedwatch {
namespace {

// Node-based: a text's copy never moves. Reached under the lock: specs load on several threads
// (the exporter's reload, its tests).
const std::string* Intern(std::string_view text) {
  static std::mutex mutex;
  static std::set<std::string, std::less<>>* texts = new std::set<std::string, std::less<>>();
  std::lock_guard<std::mutex> lock(mutex);
  auto it = texts->find(text);
  if (it == texts->end()) it = texts->emplace(text).first;
  return &*it;
}

}  // namespace

InternedText::InternedText() : text_(Intern("")) {}

InternedText::InternedText(std::string_view text) : text_(Intern(text)) {}

}  // namespace schedwatch
