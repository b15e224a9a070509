// Small text helpers the HTTP server's parts share: header values are compared case-blind and
// split on commas and semicolons.
#pragma once

#include <string>
#include <vector>

namespace schedwatch {

std::string Lower(std::string text);
std::string Trim(const std::string& text);
// Splits on `separator` and trims each part.
std::vector<std::string> Split(const std::string& text, char separator);

}  // namespace schedwatch
