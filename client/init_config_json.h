// How the aclInit config checkers (init_config.cc, init_config_dump.cc) look
// into parsed JSON values and quote them in error messages.
//
// Every helper here is safe on a value of any type and never throws:
// nlohmann's own accessors (at(), get<T>(), dump() of invalid UTF-8) throw on
// a type mismatch, and a hostile config must end in an aclError, not in an
// exception escaping through the C API.
#ifndef ACLD_CLIENT_INIT_CONFIG_JSON_H_
#define ACLD_CLIENT_INIT_CONFIG_JSON_H_

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace acl_client {
namespace config_json {

// The members of an object value, sorted by key; none for any other type.
inline const nlohmann::json::object_t& MembersOf(const nlohmann::json& value) {
  static const nlohmann::json::object_t kNone;
  const nlohmann::json::object_t* members = value.get_ptr<const nlohmann::json::object_t*>();
  return members == nullptr ? kNone : *members;
}

// The member `key` of `object`, or nullptr when `object` is not an object or
// has no such member.
inline const nlohmann::json* Find(const nlohmann::json& object, const std::string& key) {
  const nlohmann::json::object_t& members = MembersOf(object);
  const auto it = members.find(key);
  return it == members.end() ? nullptr : &it->second;
}

// The text of a string value; "" for any other type.
inline const std::string& StringOf(const nlohmann::json& value) {
  static const std::string kEmpty;
  const std::string* text = value.get_ptr<const std::string*>();
  return text == nullptr ? kEmpty : *text;
}

// The items of an array value; none for a missing value (nullptr) or one of
// any other type (iterating a scalar with nlohmann would visit the scalar
// itself).
inline const nlohmann::json::array_t& ItemsOf(const nlohmann::json* value) {
  static const nlohmann::json::array_t kNone;
  const nlohmann::json::array_t* items =
      value == nullptr ? nullptr : value->get_ptr<const nlohmann::json::array_t*>();
  return items == nullptr ? kNone : *items;
}

// Compact JSON text. Object keys come out sorted (nlohmann::json keeps them in
// a std::map), so what the admin CLI shows does not depend on the file's order.
inline std::string CompactJson(const nlohmann::json& value) {
  return value.dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

// `text` cut to at most `max` bytes plus "...", so that a message quoting a
// value stays readable. The cut moves back to a UTF-8 character boundary:
// half a character would make the whole message invalid UTF-8.
inline std::string Shortened(std::string text, size_t max) {
  if (text.size() <= max) return text;
  size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  text.resize(cut);
  return text + "...";
}

// A value as quoted in an error message: compact JSON, shortened.
inline std::string Shown(const nlohmann::json& value) { return Shortened(CompactJson(value), 80); }

inline std::string Quoted(absl::string_view s) { return absl::StrCat("\"", s, "\""); }

// True for a non-empty run of ASCII decimal digits.
inline bool IsDigits(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

}  // namespace config_json
}  // namespace acl_client

#endif  // ACLD_CLIENT_INIT_CONFIG_JSON_H_
