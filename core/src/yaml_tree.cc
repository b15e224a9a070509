#include "schedwatch/yaml_tree.h"

#include <fmt/format.h>
#include <yaml.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <memory>
#include <unordered_map>

namespace schedwatch {
namespace {

constexpr std::size_t kMaxDepth = 256;

struct ParserDeleter {
  void operator()(yaml_parser_t* parser) const {
    yaml_parser_delete(parser);
    delete parser;
  }
};

struct Event {
  yaml_event_t event;
  ~Event() { yaml_event_delete(&event); }
};

// Moves `mark` past `text`: lines, and characters (not UTF-8 continuation bytes) in the last.
void Advance(yaml_mark_t& mark, std::string_view text) {
  std::size_t last_newline = text.rfind('\n');
  std::string_view tail = text;
  if (last_newline != std::string_view::npos) {
    mark.line += static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
    mark.column = 0;
    tail = text.substr(last_newline + 1);
  }
  mark.column += static_cast<std::size_t>(std::count_if(tail.begin(), tail.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

// libyaml's input, read in pieces. Reader errors (bad UTF-8, control characters) carry only a
// byte offset, which lies in libyaml's raw buffer (16 KiB): the last bytes read are kept, with
// the position where they start.
struct Input {
  static constexpr std::size_t kKeep = 64u << 10;
  const YamlDocument::Reader* read = nullptr;
  std::optional<std::string> error;  // the reader's
  std::string recent;
  std::size_t recent_offset = 0;
  yaml_mark_t recent_mark{};

  static int Handler(void* data, unsigned char* buffer, size_t size, size_t* size_read) {
    auto* input = static_cast<Input*>(data);
    auto n = (*input->read)(reinterpret_cast<char*>(buffer), size);
    if (!n) {
      input->error = n.error();
      return 0;
    }
    *size_read = std::min(*n, size);
    input->recent.append(reinterpret_cast<const char*>(buffer), *size_read);
    if (input->recent.size() > 2 * kKeep) {
      std::size_t drop = input->recent.size() - kKeep;
      Advance(input->recent_mark, std::string_view(input->recent).substr(0, drop));
      input->recent.erase(0, drop);
      input->recent_offset += drop;
    }
    return 1;
  }

  yaml_mark_t MarkAt(std::size_t offset) const {
    yaml_mark_t mark = recent_mark;
    if (offset > recent_offset) {
      Advance(mark, std::string_view(recent).substr(0, offset - recent_offset));
    }
    return mark;
  }
};

}  // namespace

std::optional<YamlDocument::DuplicateKey> YamlDocument::FindDuplicateKey(
    const YamlDocument& doc, const std::vector<std::uint32_t>& entries) {
  std::unordered_map<std::string_view, std::uint32_t> seen;
  for (std::size_t i = 0; i + 1 < entries.size(); i += 2) {
    const Node& key = doc.nodes_[entries[i]];
    if (key.kind != YamlNode::Kind::kScalar) continue;
    std::string_view text = std::string_view(doc.scalars_).substr(key.first, key.count);
    auto [it, added] = seen.emplace(text, entries[i]);
    if (added) continue;
    const Node& earlier = doc.nodes_[it->second];
    return DuplicateKey{std::string(text),
                        {static_cast<int>(key.line), static_cast<int>(key.column)},
                        {static_cast<int>(earlier.line), static_cast<int>(earlier.column)}};
  }
  return std::nullopt;
}

bool YamlDocument::LineInsideScalar(int line) const {
  if (line < 1) return false;
  auto target = static_cast<std::uint32_t>(line);
  // The last span starting at or before `line`.
  auto after = std::upper_bound(
      scalar_lines_.begin(), scalar_lines_.end(), target,
      [](std::uint32_t value, const std::pair<std::uint32_t, std::uint32_t>& span) {
        return value < span.first;
      });
  return after != scalar_lines_.begin() && std::prev(after)->second >= target;
}

YamlDocument::Reader YamlDocument::TextReader(std::string_view text) {
  return [text, at = std::size_t{0}](char* buffer, std::size_t size) mutable {
    std::size_t n = std::min(size, text.size() - at);
    std::copy_n(text.data() + at, n, buffer);
    at += n;
    return Result<std::size_t>(n);
  };
}

Result<YamlDocument> YamlDocument::Parse(std::string_view text) {
  return Parse(TextReader(text), text.size());
}

Result<YamlDocument> YamlDocument::Parse(const Reader& read, std::size_t size_hint) {
  return Parse(read, size_hint, nullptr);
}

Result<YamlDocument> YamlDocument::Parse(const Reader& read, std::size_t size_hint,
                                         const StreamedList& streamed) {
  return Parse(read, size_hint, &streamed);
}

Result<YamlDocument> YamlDocument::Parse(const Reader& read, std::size_t size_hint,
                                         const StreamedList* streamed) {
  std::unique_ptr<yaml_parser_t, ParserDeleter> parser(new yaml_parser_t);
  if (!yaml_parser_initialize(parser.get())) return Error{"cannot initialise the YAML parser"};
  Input input;
  input.read = &read;
  yaml_parser_set_input(parser.get(), &Input::Handler, &input);

  YamlDocument doc;
  // Rough sizes for typical documents, so that growing never copies large arrays repeatedly
  // (a streamed list's items are never all held).
  if (streamed != nullptr) size_hint = std::min<std::size_t>(size_hint, 1u << 20);
  doc.nodes_.reserve(size_hint / 16 + 16);
  doc.children_.reserve(size_hint / 16 + 16);
  doc.scalars_.reserve(size_hint / 2 + 16);
  doc.nodes_.push_back({YamlNode::Kind::kNull, true, 1, 1, 0, 0});  // the empty document
  std::vector<std::vector<std::uint32_t>> open;                     // children of open collections
  std::vector<std::uint32_t> open_nodes;
  std::map<std::string, std::uint32_t> anchors;
  bool have_root = false;
  // The streamed list's level in `open` (0: none), the items handed on, and where the tree
  // stood before the current item, to drop it once handed on.
  std::size_t stream_level = 0, streamed_items = 0;
  std::size_t mark_nodes = 0, mark_children = 0, mark_scalars = 0;
  bool item_anchored = false;

  auto add_child = [&](std::uint32_t index) {
    if (open.empty()) {
      doc.root_ = index;
      have_root = true;
    } else {
      open.back().push_back(index);
    }
  };
  auto new_node = [&](YamlNode::Kind kind, const yaml_mark_t& mark, const yaml_char_t* anchor) {
    auto index = static_cast<std::uint32_t>(doc.nodes_.size());
    doc.nodes_.push_back({kind, true, static_cast<std::uint32_t>(mark.line + 1),
                          static_cast<std::uint32_t>(mark.column + 1), 0, 0});
    if (anchor != nullptr) {
      anchors[reinterpret_cast<const char*>(anchor)] = index;
      item_anchored = true;
    }
    return index;
  };

  // Whether the collection starting now is the list to stream.
  auto starts_streamed = [&](const yaml_event_t& e) {
    if (streamed == nullptr || e.type != YAML_SEQUENCE_START_EVENT || open.size() != 1 ||
        doc.nodes_[open_nodes[0]].kind != YamlNode::Kind::kMapping || open[0].size() % 2 == 0) {
      return false;
    }
    const Node& key = doc.nodes_[open[0].back()];
    if (key.kind != YamlNode::Kind::kScalar ||
        std::string_view(doc.scalars_).substr(key.first, key.count) != streamed->key) {
      return false;
    }
    // The entries so far, as a mapping of their own (the root's are written at its end).
    auto index = static_cast<std::uint32_t>(doc.nodes_.size());
    doc.nodes_.push_back({YamlNode::Kind::kMapping, true, doc.nodes_[open_nodes[0]].line,
                          doc.nodes_[open_nodes[0]].column,
                          static_cast<std::uint32_t>(doc.children_.size()),
                          static_cast<std::uint32_t>(open[0].size() - 1)});
    doc.children_.insert(doc.children_.end(), open[0].begin(), open[0].end() - 1);
    return streamed->begin(YamlNode(&doc, index));
  };

  for (;;) {
    if (stream_level != 0 && open.size() == stream_level) {
      mark_nodes = doc.nodes_.size();
      mark_children = doc.children_.size();
      mark_scalars = doc.scalars_.size();
      item_anchored = false;
    }
    Event ev;
    if (!yaml_parser_parse(parser.get(), &ev.event)) {
      if (input.error) return Error{*input.error};
      yaml_mark_t mark = parser->problem_mark.line || parser->problem_mark.column
                             ? parser->problem_mark
                             : parser->context_mark;
      if (parser->error == YAML_READER_ERROR) mark = input.MarkAt(parser->problem_offset);
      return Error{fmt::format("{}:{}: {}{}{}", mark.line + 1, mark.column + 1,
                               parser->problem ? parser->problem : "YAML syntax error",
                               parser->context ? " " : "", parser->context ? parser->context : "")};
    }
    const yaml_event_t& e = ev.event;
    switch (e.type) {
      case YAML_STREAM_END_EVENT:
        return doc;
      case YAML_DOCUMENT_END_EVENT: {
        // Only the first document is read; whether another follows is the caller's to judge.
        Event next;
        bool parsed = yaml_parser_parse(parser.get(), &next.event);
        if (input.error) return Error{*input.error};
        if (parsed && next.event.type == YAML_DOCUMENT_START_EVENT) {
          doc.second_document_ = Position{static_cast<int>(next.event.start_mark.line + 1),
                                          static_cast<int>(next.event.start_mark.column + 1)};
        } else if (parser->error != YAML_NO_ERROR) {
          // Something after the first document that is not even YAML: a second one, broken.
          doc.second_document_ = Position{static_cast<int>(parser->problem_mark.line + 1),
                                          static_cast<int>(parser->problem_mark.column + 1)};
        }
        return doc;
      }
      case YAML_ALIAS_EVENT: {
        auto it = anchors.find(reinterpret_cast<const char*>(e.data.alias.anchor));
        if (it == anchors.end()) {
          return Error{fmt::format("{}:{}: unknown alias \"{}\"", e.start_mark.line + 1,
                                   e.start_mark.column + 1,
                                   reinterpret_cast<const char*>(e.data.alias.anchor))};
        }
        // An alias inside the node it names would make the tree a cycle, which every walker
        // would follow forever.
        if (std::find(open_nodes.begin(), open_nodes.end(), it->second) != open_nodes.end()) {
          return Error{
              fmt::format("{}:{}: alias \"{}\" refers to a node that contains it (a cycle)",
                          e.start_mark.line + 1, e.start_mark.column + 1,
                          reinterpret_cast<const char*>(e.data.alias.anchor))};
        }
        add_child(it->second);
        break;
      }
      case YAML_SCALAR_EVENT: {
        const auto& s = e.data.scalar;
        std::string_view value(reinterpret_cast<const char*>(s.value), s.length);
        bool plain = s.style == YAML_PLAIN_SCALAR_STYLE;
        bool is_null = plain && (value.empty() || value == "~" || value == "null" ||
                                 value == "Null" || value == "NULL");
        auto index = new_node(is_null ? YamlNode::Kind::kNull : YamlNode::Kind::kScalar,
                              e.start_mark, s.anchor);
        Node& node = doc.nodes_[index];
        node.plain = plain;
        node.first = static_cast<std::uint32_t>(doc.scalars_.size());
        node.count = static_cast<std::uint32_t>(value.size());
        doc.scalars_.append(value);
        add_child(index);
        // Lines after the first that the scalar covers; the end mark sits at column 0 of the
        // line after a block scalar, which is then not inside it.
        std::uint32_t last =
            static_cast<std::uint32_t>(e.end_mark.line + 1) - (e.end_mark.column == 0 ? 1 : 0);
        std::uint32_t first = static_cast<std::uint32_t>(e.start_mark.line + 2);
        if (last >= first) doc.scalar_lines_.emplace_back(first, last);
        break;
      }
      case YAML_SEQUENCE_START_EVENT:
      case YAML_MAPPING_START_EVENT: {
        if (open.size() >= kMaxDepth) {
          return Error{fmt::format("{}:{}: nesting deeper than {} levels", e.start_mark.line + 1,
                                   e.start_mark.column + 1, kMaxDepth)};
        }
        bool sequence = e.type == YAML_SEQUENCE_START_EVENT;
        bool streams = starts_streamed(e);
        auto index =
            new_node(sequence ? YamlNode::Kind::kSequence : YamlNode::Kind::kMapping, e.start_mark,
                     sequence ? e.data.sequence_start.anchor : e.data.mapping_start.anchor);
        add_child(index);
        open.emplace_back();
        open_nodes.push_back(index);
        if (streams) stream_level = open.size();
        break;
      }
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT: {
        if (e.type == YAML_MAPPING_END_EVENT && !doc.duplicate_key_) {
          doc.duplicate_key_ = FindDuplicateKey(doc, open.back());
        }
        Node& node = doc.nodes_[open_nodes.back()];
        node.first = static_cast<std::uint32_t>(doc.children_.size());
        node.count = static_cast<std::uint32_t>(open.back().size());
        doc.children_.insert(doc.children_.end(), open.back().begin(), open.back().end());
        open.pop_back();
        open_nodes.pop_back();
        if (open.size() < stream_level) stream_level = 0;
        break;
      }
      default:
        break;
    }
    if (stream_level != 0 && open.size() == stream_level && !open.back().empty()) {
      streamed->item(YamlNode(&doc, open.back().back()), streamed_items++);
      open.back().pop_back();
      if (!item_anchored) {
        doc.nodes_.resize(mark_nodes);
        doc.children_.resize(mark_children);
        doc.scalars_.resize(mark_scalars);
      }
    }
  }
}

YamlNode::Kind YamlNode::kind() const { return document_->nodes_[index_].kind; }
int YamlNode::line() const { return static_cast<int>(document_->nodes_[index_].line); }
int YamlNode::column() const { return static_cast<int>(document_->nodes_[index_].column); }
bool YamlNode::plain() const { return document_->nodes_[index_].plain; }

std::string_view YamlNode::scalar() const {
  const auto& node = document_->nodes_[index_];
  if (node.kind != Kind::kScalar) return {};
  return std::string_view(document_->scalars_).substr(node.first, node.count);
}

std::size_t YamlNode::size() const {
  const auto& node = document_->nodes_[index_];
  switch (node.kind) {
    case Kind::kSequence:
      return node.count;
    case Kind::kMapping:
      return node.count / 2;
    default:
      return 0;
  }
}

YamlNode YamlNode::item(std::size_t i) const {
  return YamlNode(document_, document_->children_[document_->nodes_[index_].first + i]);
}
YamlNode YamlNode::key(std::size_t i) const { return item(2 * i); }
YamlNode YamlNode::value(std::size_t i) const { return item(2 * i + 1); }

std::string YamlNode::Describe() const {
  switch (kind()) {
    case Kind::kNull:
      return "nothing (null)";
    case Kind::kSequence:
      return "a list";
    case Kind::kMapping:
      return "a mapping";
    case Kind::kScalar:
      break;
  }
  std::string_view text = scalar();
  if (text.size() > 40) return fmt::format("the value \"{}...\"", text.substr(0, 40));
  return fmt::format("the value \"{}\"", text);
}

std::string YamlNode::DescribeShape() const {
  if (!IsScalar()) return Describe();
  std::size_t bytes = scalar().size();
  return fmt::format("a string of {} byte{}", bytes, bytes == 1 ? "" : "s");
}

}  // namespace schedwatch
