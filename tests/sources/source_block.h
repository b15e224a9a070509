// A source block decoded as the spec decodes it (through the built-in descriptors), for tests
// that make one source or repairer by hand.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "schedwatch/spec.h"
#include "sources/catalog.h"

namespace schedwatch::testing {

// `entries` is the block's flow-mapping text after `type`, e.g. "path: x.yaml, timeout: 5s".
inline Result<SourceSpec> DecodeSourceBlock(const std::string& name, const std::string& type,
                                            const std::string& entries,
                                            const std::string& file = "/spec/spec.yaml") {
  std::string text = "version: 1\nsources:\n  " + name + ": {type: " + type +
                     (entries.empty() ? "" : ", " + entries) + "}\njobs: []\n";
  auto spec = ParseSpec(text, file, BuiltInCatalog());
  if (!spec) return Error{spec.error()};
  return spec->sources.at(name);
}

// The same from key -> values (one value: a scalar; several: a list), each quoted.
inline Result<SourceSpec> DecodeSourceBlock(
    const std::string& name, const std::string& type,
    const std::map<std::string, std::vector<std::string>>& settings) {
  auto quote = [](const std::string& text) {
    std::string out = "\"";
    for (char c : text) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    return out + "\"";
  };
  std::string entries;
  for (const auto& [key, values] : settings) {
    if (!entries.empty()) entries += ", ";
    entries += key + ": ";
    if (values.size() == 1) {
      entries += quote(values[0]);
      continue;
    }
    entries += "[";
    for (std::size_t i = 0; i < values.size(); ++i) entries += (i ? ", " : "") + quote(values[i]);
    entries += "]";
  }
  return DecodeSourceBlock(name, type, entries);
}

}  // namespace schedwatch::testing
