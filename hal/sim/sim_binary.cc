#include "hal/sim/sim_binary.h"

#include <algorithm>
#include <limits>
#include <set>

#include "absl/strings/str_cat.h"

namespace hal::sim {
namespace {

// Every entry needs at least two length fields and two one-byte names.
constexpr size_t kMinEntryBytes = 2 + 1 + 2 + 1;

absl::Status Invalid(absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat("sim binary: ", message));
}

bool ValidNameByte(unsigned char c) { return c >= 0x21 && c <= 0x7E; }

// Checks one name; `what` says which ("function name 3").
absl::Status CheckName(absl::string_view name, absl::string_view what) {
  if (name.empty()) return Invalid(absl::StrCat(what, " is empty"));
  if (name.size() > kMaxSimBinaryNameBytes) {
    return Invalid(absl::StrCat(what, " is ", name.size(), " bytes; at most ",
                                kMaxSimBinaryNameBytes, " are allowed"));
  }
  for (size_t i = 0; i < name.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(name[i]);
    if (!ValidNameByte(c)) {
      return Invalid(absl::StrCat(what, " has byte 0x", absl::Hex(c, absl::kZeroPad2),
                                  " at position ", i,
                                  "; names are printable non-space ASCII (0x21..0x7E)"));
    }
  }
  return absl::OkStatus();
}

// Reads little-endian fields from `bytes`, never past its end. Each read
// first compares the wanted size with what remains, so no offset arithmetic
// can overflow.
class Reader {
 public:
  explicit Reader(absl::string_view bytes) : bytes_(bytes) {}

  size_t offset() const { return offset_; }
  size_t remaining() const { return bytes_.size() - offset_; }

  bool ReadU16(uint16_t* value) {
    if (remaining() < 2) return false;
    *value = static_cast<uint16_t>(Byte(0) | (Byte(1) << 8));
    offset_ += 2;
    return true;
  }
  bool ReadU32(uint32_t* value) {
    if (remaining() < 4) return false;
    *value = Byte(0) | (Byte(1) << 8) | (Byte(2) << 16) | (Byte(3) << 24);
    offset_ += 4;
    return true;
  }
  bool ReadBytes(size_t count, absl::string_view* value) {
    if (remaining() < count) return false;
    *value = bytes_.substr(offset_, count);
    offset_ += count;
    return true;
  }

 private:
  uint32_t Byte(size_t i) const { return static_cast<unsigned char>(bytes_[offset_ + i]); }

  absl::string_view bytes_;
  size_t offset_ = 0;
};

// Reads one length-prefixed name at the reader's position.
absl::Status ReadName(Reader& reader, absl::string_view what, std::string* name) {
  const size_t at = reader.offset();
  uint16_t length = 0;
  if (!reader.ReadU16(&length)) {
    return Invalid(absl::StrCat("truncated at byte ", at, ": the length of ", what,
                                " needs 2 bytes, ", reader.remaining(), " remain"));
  }
  if (length == 0 || length > kMaxSimBinaryNameBytes) {
    return Invalid(absl::StrCat(what, " at byte ", at, " has length ", length, "; names are 1..",
                                kMaxSimBinaryNameBytes, " bytes"));
  }
  absl::string_view bytes;
  if (!reader.ReadBytes(length, &bytes)) {
    return Invalid(absl::StrCat("truncated at byte ", at + 2, ": ", what, " needs ", length,
                                " bytes, ", reader.remaining(), " remain"));
  }
  absl::Status status = CheckName(bytes, absl::StrCat(what, " at byte ", at + 2));
  if (!status.ok()) return status;
  *name = std::string(bytes);
  return absl::OkStatus();
}

void AppendU16(std::string& out, uint16_t value) {
  out.push_back(static_cast<char>(value & 0xFF));
  out.push_back(static_cast<char>(value >> 8));
}

void AppendU32(std::string& out, uint32_t value) {
  for (int shift = 0; shift < 32; shift += 8) out.push_back(static_cast<char>((value >> shift) & 0xFF));
}

void AppendName(std::string& out, const std::string& name) {
  const size_t length = std::min<size_t>(name.size(), std::numeric_limits<uint16_t>::max());
  AppendU16(out, static_cast<uint16_t>(length));
  out.append(name, 0, length);
}

}  // namespace

bool LooksLikeElf(absl::string_view bytes) {
  return bytes.size() >= 4 && bytes.substr(0, 4) == absl::string_view("\x7f" "ELF", 4);
}

absl::Status ValidateSimBinaryEntries(const std::vector<SimBinaryEntry>& entries) {
  if (entries.empty()) return Invalid("it names no function (at least one entry is needed)");
  if (entries.size() > kMaxSimBinaryEntries) {
    return Invalid(absl::StrCat(entries.size(), " entries; at most ", kMaxSimBinaryEntries,
                                " are allowed"));
  }
  std::set<absl::string_view> functions;
  for (size_t i = 0; i < entries.size(); ++i) {
    absl::Status status = CheckName(entries[i].function, absl::StrCat("function name ", i));
    if (!status.ok()) return status;
    status = CheckName(entries[i].kernel, absl::StrCat("kernel name ", i));
    if (!status.ok()) return status;
    if (!functions.insert(entries[i].function).second) {
      return Invalid(absl::StrCat("function '", entries[i].function, "' appears more than once"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<SimBinaryEntry>> ParseSimBinary(absl::string_view bytes) {
  if (bytes.size() > kMaxSimBinaryBytes) {
    return Invalid(absl::StrCat(bytes.size(), " bytes; a sim binary is at most ",
                                kMaxSimBinaryBytes, " bytes"));
  }
  Reader reader(bytes);
  absl::string_view magic;
  if (!reader.ReadBytes(kSimBinaryMagicBytes, &magic) ||
      magic != absl::string_view(kSimBinaryMagic, kSimBinaryMagicBytes)) {
    if (LooksLikeElf(bytes)) {
      return Invalid(
          "this is an ELF file (a real device binary); the sim runs only sim binaries, which "
          "name its built-in kernels (see docs/sim-binary.md and the simbin tool)");
    }
    return Invalid(absl::StrCat("not a sim binary: it does not start with \"", kSimBinaryMagic,
                                "\" (", bytes.size(), " bytes)"));
  }
  uint32_t version = 0;
  if (!reader.ReadU32(&version)) {
    return Invalid(absl::StrCat("truncated at byte ", reader.offset(), ": no version field"));
  }
  if (version != kSimBinaryVersion) {
    return Invalid(absl::StrCat("unsupported version ", version, " (this build reads version ",
                                kSimBinaryVersion, ")"));
  }
  uint32_t count = 0;
  if (!reader.ReadU32(&count)) {
    return Invalid(absl::StrCat("truncated at byte ", reader.offset(), ": no entry count field"));
  }
  if (count == 0) return Invalid("it names no function (entry count 0)");
  if (count > kMaxSimBinaryEntries) {
    return Invalid(absl::StrCat("entry count ", count, "; at most ", kMaxSimBinaryEntries,
                                " are allowed"));
  }
  // count <= 1024, so the product cannot overflow.
  if (size_t{count} * kMinEntryBytes > reader.remaining()) {
    return Invalid(absl::StrCat("entry count ", count, " needs at least ",
                                size_t{count} * kMinEntryBytes, " bytes of entries, only ",
                                reader.remaining(), " follow the header"));
  }

  std::vector<SimBinaryEntry> entries;
  entries.reserve(count);
  std::set<std::string> functions;
  for (uint32_t i = 0; i < count; ++i) {
    SimBinaryEntry entry;
    absl::Status status = ReadName(reader, absl::StrCat("entry ", i, "'s function name"),
                                   &entry.function);
    if (!status.ok()) return status;
    status = ReadName(reader, absl::StrCat("entry ", i, "'s kernel name"), &entry.kernel);
    if (!status.ok()) return status;
    if (!functions.insert(entry.function).second) {
      return Invalid(absl::StrCat("entry ", i, ": function '", entry.function,
                                  "' appears more than once"));
    }
    entries.push_back(std::move(entry));
  }
  if (reader.remaining() != 0) {
    return Invalid(absl::StrCat(reader.remaining(), " trailing bytes after the last entry (at byte ",
                                reader.offset(), ")"));
  }
  return entries;
}

std::string EncodeSimBinary(const std::vector<SimBinaryEntry>& entries) {
  std::string out(kSimBinaryMagic, kSimBinaryMagicBytes);
  AppendU32(out, kSimBinaryVersion);
  const size_t count = std::min<size_t>(entries.size(), std::numeric_limits<uint32_t>::max());
  AppendU32(out, static_cast<uint32_t>(count));
  for (size_t i = 0; i < count; ++i) {
    AppendName(out, entries[i].function);
    AppendName(out, entries[i].kernel);
  }
  return out;
}

}  // namespace hal::sim
