// The settings every source that calls an HTTP API decodes alike: where its token comes from and
// the API's base URL. Pure, so the source catalog (the descriptors) may include it from core.
#pragma once

#include <fmt/format.h>

#include <string>

#include "schedwatch/source_type.h"

namespace schedwatch {

// Reads `token_file` and `token_env` (which exclude each other) and `api_url` (http:// or
// https://, kept without trailing '/'; left as given by the caller's default when absent).
inline void ReadApiAccessSettings(SettingsReader& reader, std::string& token_file,
                                  std::string& token_env, std::string& api_url) {
  token_file = reader.Path("token_file").value_or("");
  token_env = reader.String("token_env").value_or("");
  if (!token_file.empty() && !token_env.empty()) {
    reader.Problem("token_env", "token_file and token_env exclude each other");
  }
  if (auto given = reader.String("api_url")) {
    std::string url = *given;
    while (!url.empty() && url.back() == '/') url.pop_back();
    if (url.rfind("https://", 0) != 0 && url.rfind("http://", 0) != 0) {
      reader.Problem("api_url", fmt::format("\"{}\" is not an http:// or https:// URL", *given));
    }
    api_url = url;
  }
}

}  // namespace schedwatch
