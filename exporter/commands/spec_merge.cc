#include "exporter/commands/spec_merge.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "schedwatch/yaml_tree.h"

namespace schedwatch {
namespace {

// Byte offsets of each line's start.
std::vector<std::size_t> LineStarts(std::string_view text) {
  std::vector<std::size_t> starts = {0};
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') starts.push_back(i + 1);
  }
  return starts;
}

// libyaml's columns count characters, not bytes.
std::size_t OffsetOf(std::string_view text, const std::vector<std::size_t>& starts, int line,
                     int column) {
  std::size_t offset = starts[static_cast<std::size_t>(line - 1)];
  for (int seen = 1; seen < column && offset < text.size();) {
    ++offset;
    if ((static_cast<unsigned char>(text[offset]) & 0xC0) != 0x80) ++seen;
  }
  return offset;
}

// The offset just after the ']' closing the flow sequence opened at `open`; quotes and
// comments are skipped. npos when it is not closed.
std::size_t ClosingBracket(std::string_view text, std::size_t open) {
  int depth = 0;
  for (std::size_t i = open; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"' || c == '\'') {
      for (++i; i < text.size(); ++i) {
        if (c == '"' && text[i] == '\\') {
          ++i;
        } else if (text[i] == c) {
          if (c == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
            ++i;  // '' inside single quotes
          } else {
            break;
          }
        }
      }
    } else if (c == '#' && (i == 0 || std::isspace(static_cast<unsigned char>(text[i - 1])))) {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if (c == ']' || c == '}') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::string_view::npos;
}

bool BlankOrComment(std::string_view line, int* indent) {
  std::size_t first = line.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) {
    *indent = 1 << 20;  // blank: never deeper than anything
    return true;
  }
  *indent = static_cast<int>(first);
  return line[first] == '#';
}

std::string FlowItem(const JobText& job) {
  std::string out = "{";
  for (std::size_t i = 0; i < job.fields.size(); ++i) {
    out += fmt::format("{}{}: {}", i == 0 ? "" : ", ", job.fields[i].first, job.fields[i].second);
  }
  return out + "}";
}

}  // namespace

std::string YamlScalar(std::string_view text) {
  bool plain = !text.empty() && std::isalpha(static_cast<unsigned char>(text[0])) &&
               std::all_of(text.begin(), text.end(), [](char c) {
                 return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ||
                        c == '.' || c == '/';
               });
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
  for (const char* word : {"true", "false", "null", "yes", "no", "on", "off", "y", "n"}) {
    if (lower == word) plain = false;
  }
  return plain ? std::string(text) : QuotedScalar(text);
}

std::string QuotedScalar(std::string_view text) {
  return nlohmann::json(std::string(text))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string RenderJobBlock(const JobText& job, int indent, int gap) {
  std::string pad(static_cast<std::size_t>(indent), ' ');
  std::string key_pad(static_cast<std::size_t>(indent + 1 + gap), ' ');
  std::string out;
  for (const auto& comment : job.comments) out += fmt::format("{}# {}\n", pad, comment);
  for (std::size_t i = 0; i < job.fields.size(); ++i) {
    out += i == 0 ? fmt::format("{}-{}", pad, std::string(static_cast<std::size_t>(gap), ' '))
                  : key_pad;
    out += fmt::format("{}: {}", job.fields[i].first, job.fields[i].second);
    if (i < job.field_comments.size() && !job.field_comments[i].empty()) {
      out += "  # " + job.field_comments[i];
    }
    out += "\n";
  }
  return out;
}

Result<std::string> AppendJobs(std::string_view spec_text, const std::vector<JobText>& jobs,
                               const std::string& header) {
  if (jobs.empty()) return std::string(spec_text);
  auto document = YamlDocument::Parse(spec_text);
  if (!document) return Error{document.error()};
  YamlNode root = document->root();
  if (!root.IsMapping()) return Error{"the spec is not a mapping"};
  std::optional<YamlNode> list;
  std::optional<YamlNode> list_key, next_key;
  for (std::size_t i = 0; i < root.size(); ++i) {
    if (root.key(i).IsScalar() && root.key(i).scalar() == "jobs") {
      list_key = root.key(i);
      list = root.value(i);
      if (i + 1 < root.size()) next_key = root.key(i + 1);
    }
  }
  if (!list || !list->IsSequence()) return Error{"the spec has no jobs: list"};
  const std::vector<std::size_t> starts = LineStarts(spec_text);
  std::string text(spec_text);
  std::size_t at = OffsetOf(text, starts, list->line(), list->column());

  if (at < text.size() && text[at] == '[') {  // a flow list
    std::size_t close = ClosingBracket(text, at);
    if (close == std::string::npos) return Error{"the jobs: list is not closed"};
    bool empty = list->size() == 0;
    std::size_t root_at = OffsetOf(text, starts, root.line(), root.column());
    bool all_flow = root_at < text.size() && text[root_at] == '{';
    if (empty && !all_flow) {
      // `jobs: []` becomes a block list under the key; the rest of its line (a comment) stays.
      int indent = list_key->column() - 1 + 2;
      std::string block = std::string(static_cast<std::size_t>(indent), ' ') + "# " + header + "\n";
      for (const auto& job : jobs) block += RenderJobBlock(job, indent);
      std::size_t from = at;
      while (from > 0 && (text[from - 1] == ' ' || text[from - 1] == '\t')) --from;
      // Whatever followed `]` on its line (a comment) stays, a blank before it.
      bool more_on_line = close < text.size() && text[close] != '\n' && text[close] != '\r';
      text.replace(from, close - from, more_on_line ? " " : "");
      std::size_t line_end = text.find('\n', from);
      if (line_end == std::string::npos) {
        text += "\n";
        line_end = text.size() - 1;
      }
      text.insert(line_end + 1, block);
      return text;
    }
    std::string items;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      items += (empty && i == 0 ? "" : ", ") + FlowItem(jobs[i]);
    }
    text.insert(close - 1, items);
    return text;
  }

  // A block list. Its dash is the first non-blank before the first item.
  YamlNode first = list->item(0);
  std::size_t item_at = OffsetOf(text, starts, first.line(), first.column());
  std::size_t dash = item_at;
  while (dash > 0 && text[dash - 1] != '-') --dash;
  if (dash == 0) return Error{"cannot find the jobs: list's first dash"};
  --dash;
  std::size_t dash_line_start = text.rfind('\n', dash);
  dash_line_start = dash_line_start == std::string::npos ? 0 : dash_line_start + 1;
  int indent = static_cast<int>(dash - dash_line_start);
  int gap = first.line() == static_cast<int>(std::upper_bound(starts.begin(), starts.end(), dash) -
                                             starts.begin())
                ? static_cast<int>(item_at - dash - 1)
                : 1;
  if (gap < 1) gap = 1;

  // After the list: before the next top-level key, or at the end, and before the comments and
  // blank lines that lead up to it when they are less indented than the items.
  int lines = static_cast<int>(starts.back() == text.size() ? starts.size() - 1 : starts.size());
  int insert_line = next_key ? next_key->line() : lines + 1;  // the new items go before it
  while (insert_line - 1 > list->line()) {
    int line = insert_line - 1;
    if (document->LineInsideScalar(line)) break;
    std::size_t begin = starts[static_cast<std::size_t>(line - 1)];
    std::size_t end = static_cast<std::size_t>(line) < starts.size()
                          ? starts[static_cast<std::size_t>(line)]
                          : text.size();
    int line_indent = 0;
    if (!BlankOrComment(std::string_view(text).substr(begin, end - begin), &line_indent) ||
        line_indent > indent) {
      break;
    }
    --insert_line;
  }
  std::size_t offset = static_cast<std::size_t>(insert_line - 1) < starts.size()
                           ? starts[static_cast<std::size_t>(insert_line - 1)]
                           : text.size();
  std::string block;
  if (offset == text.size() && !text.empty() && text.back() != '\n') block += "\n";
  block += std::string(static_cast<std::size_t>(indent), ' ') + "# " + header + "\n";
  for (const auto& job : jobs) block += RenderJobBlock(job, indent, gap);
  text.insert(offset, block);
  return text;
}

}  // namespace schedwatch
