#include <cstring>
#include <limits>
#include <stdexcept>

#include "schedwatch/classify.h"

namespace schedwatch {

// What the one shared buffer is for: see the class.
static_assert(sizeof(LiveObject) <= 48);

LiveObject::LiveObject(std::string_view id, std::string_view role, std::string_view schedule,
                       std::string_view timezone, std::string_view spec_version, bool enabled)
    : enabled(enabled) {
  Pack({id, role, schedule, timezone, spec_version, {}, {}});
}

std::size_t LiveObject::End(int field) const {
  if (field == kFields - 1) return text_.size() - HeadBytes();
  if (!Wide()) return ends_[field];
  std::uint32_t end = 0;
  std::memcpy(&end, text_.data() + field * sizeof end, sizeof end);
  return end;
}

std::string_view LiveObject::Field(int field) const {
  std::size_t begin = field == 0 ? 0 : End(field - 1);
  return text_.view().substr(HeadBytes() + begin, End(field) - begin);
}

void LiveObject::SetField(int field, std::string_view value) {
  std::array<std::string_view, kFields> fields;
  for (int i = 0; i < kFields; ++i) fields[i] = i == field ? value : Field(i);
  Pack(fields);  // builds a new buffer before it drops the old one, which `fields` points into
}

void LiveObject::Pack(const std::array<std::string_view, kFields>& fields) {
  std::size_t size = 0;
  for (std::string_view field : fields) size += field.size();
  // No source reads that much: HTTP bodies stop at 512 MiB, specs at 32 MiB.
  if (size > std::numeric_limits<std::uint32_t>::max()) {
    throw std::length_error("LiveObject: fields longer than 4 GiB");
  }
  bool wide = size > kNarrowBytes;
  std::size_t head = wide ? kWideHeadBytes : 0;
  SharedText text(head + size);
  char* out = text.data();
  std::size_t end = 0;
  for (int i = 0; i < kFields; ++i) {
    if (!fields[i].empty()) std::memcpy(out + head + end, fields[i].data(), fields[i].size());
    end += fields[i].size();
    if (i == kFields - 1) break;
    // One layout for one set of fields: operator== compares the buffers.
    ends_[i] = wide ? 0 : static_cast<std::uint16_t>(end);
    if (wide) {
      auto wide_end = static_cast<std::uint32_t>(end);
      std::memcpy(out + i * sizeof wide_end, &wide_end, sizeof wide_end);
    }
  }
  text_ = std::move(text);
}

bool operator==(const LiveObject& a, const LiveObject& b) {
  // Equal fields are packed the same way, so equal buffers and ends are equal fields.
  return a.text_ == b.text_ && a.ends_ == b.ends_ && a.enabled == b.enabled &&
         a.start_delay == b.start_delay && a.next_start == b.next_start;
}

}  // namespace schedwatch
