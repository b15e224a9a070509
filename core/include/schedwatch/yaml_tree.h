// A compact, read-only YAML tree with line and column for every node, built from libyaml's
// event stream. yaml-cpp's YAML::Load took 6.4 s and 613 MiB for a 100,000-job spec here;
// this takes a fraction of that, and aliases share nodes instead of copying them.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schedwatch/result.h"

namespace schedwatch {

class YamlDocument;

// A handle to one node of a YamlDocument; cheap to copy, valid while the document lives.
class YamlNode {
 public:
  enum class Kind : std::uint8_t { kNull, kScalar, kSequence, kMapping };

  Kind kind() const;
  bool IsNull() const { return kind() == Kind::kNull; }
  bool IsScalar() const { return kind() == Kind::kScalar; }
  bool IsSequence() const { return kind() == Kind::kSequence; }
  bool IsMapping() const { return kind() == Kind::kMapping; }
  // 1-based position of the node's first character.
  int line() const;
  int column() const;
  // The scalar's text ("" for null and collections).
  std::string_view scalar() const;
  // True when the scalar was written without quotes (so `null`, `true`, `5` keep their meaning).
  bool plain() const;

  // Sequences: items. Mappings: number of entries, keys and values.
  std::size_t size() const;
  YamlNode item(std::size_t i) const;
  YamlNode key(std::size_t i) const;
  YamlNode value(std::size_t i) const;

  // A short description for error messages: "a mapping", "a list", "the string \"x\"".
  std::string Describe() const;
  // The same without the text: "a string of 26 bytes". For input whose text must not be shown
  // (a file a job's user may have linked to a secret).
  std::string DescribeShape() const;

 private:
  friend class YamlDocument;
  YamlNode(const YamlDocument* document, std::uint32_t index)
      : document_(document), index_(index) {}
  const YamlDocument* document_;
  std::uint32_t index_;
};

class YamlDocument {
 public:
  // Parses the first document of `text` (and looks whether a second one starts). Errors read
  // "LINE:COLUMN: message" (1-based).
  // The tree is acyclic and at most 256 levels deep: an alias to a node still open is an error.
  // Aliases share nodes, so a walker that expands them (into JSON, say) still needs a budget.
  static Result<YamlDocument> Parse(std::string_view text);
  // The same, reading the text in pieces: `read` fills up to `size` bytes of `buffer` and says
  // how many (0 at the end), or fails with the message the parse then fails with. So a large
  // file is never held whole beside its tree. `size_hint` (the expected bytes) sizes the tree.
  using Reader = std::function<Result<std::size_t>(char* buffer, std::size_t size)>;
  // A Reader of `text`, which must outlive it.
  static Reader TextReader(std::string_view text);
  static Result<YamlDocument> Parse(const Reader& read, std::size_t size_hint);
  // A list decoded as it streams by instead of held: each item of the list under `key` of the
  // root mapping goes to `item` once complete, then leaves the tree (one defining an anchor
  // stays for later aliases, outside the list), so the list reads as empty and a million items
  // cost one item's nodes. `begin` is asked first, with the root's entries before the list (a
  // mapping): false keeps the list whole. Nodes handed to either are valid during the call only.
  struct StreamedList {
    std::string_view key;
    std::function<bool(YamlNode entries_before)> begin;
    std::function<void(YamlNode item, std::size_t index)> item;
  };
  static Result<YamlDocument> Parse(const Reader& read, std::size_t size_hint,
                                    const StreamedList& streamed);

  YamlNode root() const { return YamlNode(this, root_); }

  struct Position {
    int line = 0, column = 0;  // 1-based
  };
  // Where a second document starts ("---" after the first), when the text holds one: Parse
  // reads the first only, and callers refuse or judge the rest.
  const std::optional<Position>& second_document() const { return second_document_; }
  // The first key written twice in one mapping (scalar keys, compared as text), if any.
  struct DuplicateKey {
    std::string key;
    Position at, first;  // the second occurrence, and the first
  };
  const std::optional<DuplicateKey>& duplicate_key() const { return duplicate_key_; }
  // Whether 1-based `line` lies inside a scalar that spans lines (a `run: |` block, a quoted
  // string going on), where a '#' is text, not a comment.
  bool LineInsideScalar(int line) const;

 private:
  friend class YamlNode;
  struct Node {
    YamlNode::Kind kind;
    bool plain;
    std::uint32_t line, column;
    std::uint32_t first;  // scalar: offset in scalars_; collection: offset in children_
    std::uint32_t count;  // scalar: length; sequence: items; mapping: 2 x entries
  };
  static Result<YamlDocument> Parse(const Reader& read, std::size_t size_hint,
                                    const StreamedList* streamed);
  static std::optional<DuplicateKey> FindDuplicateKey(const YamlDocument& doc,
                                                      const std::vector<std::uint32_t>& entries);

  std::vector<Node> nodes_;
  std::vector<std::uint32_t> children_;
  std::string scalars_;
  std::uint32_t root_ = 0;
  std::optional<Position> second_document_;
  std::optional<DuplicateKey> duplicate_key_;
  // [first, last] lines that are inside multi-line scalars, in order, not overlapping.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> scalar_lines_;
};

}  // namespace schedwatch
