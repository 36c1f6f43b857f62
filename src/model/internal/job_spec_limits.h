#pragma once
// Limits of a JobSpec and the small checks shared by its reader (job_spec_parse.cc) and ValidateJobSpec
// (job_spec.cc). Private to src/model. Stateless; thread-safe.
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace xpool::job_spec_limits {

inline constexpr int64_t kMaxCpuMilli = 1024 * 1000;              // 1024 cores per replica
inline constexpr int64_t kMaxMemoryMiB = int64_t{64} << 20;       // 64 TiB
inline constexpr int64_t kMaxDeviceMemoryMiB = int64_t{1} << 20;  // 1 TiB per device
inline constexpr int kMaxSelectorItems = 64;
inline constexpr size_t kMaxSelectorLength = 128;
inline constexpr int kMaxArgs = 256;
inline constexpr size_t kMaxArgLength = 4096;
inline constexpr size_t kMaxShellCommandLength = 64 * 1024;
inline constexpr size_t kMaxPathLength = 4096;
inline constexpr int kMaxEnv = 256;
inline constexpr size_t kMaxEnvNameLength = 256;
inline constexpr size_t kMaxEnvValueLength = 32 * 1024;
inline constexpr size_t kMaxNameLength = 63;
inline constexpr size_t kMaxMigProfileLength = 32;

template <typename T>
Status CheckRange(T value, T lo, T hi, const std::string& path, std::string_view range) {
  if (value < lo || value > hi) {
    return InvalidArgumentError(path + " must be " + std::string(range) + " (got " + std::to_string(value) + ")");
  }
  return Status::Ok();
}
inline Status CheckRange(int value, int lo, int hi, const std::string& path, std::string_view range) {
  return CheckRange<int64_t>(value, lo, hi, path, range);
}

// True when `s` is well-formed UTF-8 (no overlongs, no surrogates, at most U+10FFFF).
inline bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    int extra = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      extra = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      extra = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      extra = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + static_cast<size_t>(extra) >= s.size()) return false;
    for (int k = 1; k <= extra; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((extra == 1 && cp < 0x80) || (extra == 2 && cp < 0x800) || (extra == 3 && cp < 0x10000)) return false;
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += static_cast<size_t>(extra) + 1;
  }
  return true;
}

// Length within [min_len, max_len] bytes, no NUL bytes, valid UTF-8.
inline Status CheckText(std::string_view text, const std::string& path, size_t min_len, size_t max_len) {
  if (text.size() < min_len) {
    return InvalidArgumentError(
        path + (min_len == 1 ? " must not be empty" : " must be at least " + std::to_string(min_len) + " bytes"));
  }
  if (text.size() > max_len) {
    return InvalidArgumentError(path + " must be at most " + std::to_string(max_len) + " bytes");
  }
  if (text.find('\0') != std::string_view::npos) {
    return InvalidArgumentError(path + " must not contain NUL bytes");
  }
  if (!IsValidUtf8(text)) return InvalidArgumentError(path + " is not valid UTF-8");
  return Status::Ok();
}

// A DNS label: 1..63 of [a-z0-9-], starting and ending with a letter or digit.
inline Status CheckName(std::string_view name, const std::string& path) {
  const std::string rule =
      " must be 1..63 characters of a-z, 0-9 and '-', starting and ending with a letter "
      "or digit";
  if (name.empty() || name.size() > kMaxNameLength) return InvalidArgumentError(path + rule);
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return InvalidArgumentError(path + rule);
  }
  if (name.front() == '-' || name.back() == '-') return InvalidArgumentError(path + rule);
  return Status::Ok();
}

// An OCI image reference as podman takes it: [REGISTRY[:PORT]/]NAME[:TAG][@DIGEST], 1..255 characters of
// a-z A-Z 0-9 . _ - / : @, starting with a letter or digit (no spaces, no options: "-v" cannot sneak in).
inline Status CheckImage(std::string_view image) {
  const std::string rule =
      "image must be an OCI image reference such as docker.io/library/python:3.12 (1..255 characters of a-z, A-Z, "
      "0-9, '.', '_', '-', '/', ':' and '@', starting with a letter or digit)";
  if (image.empty() || image.size() > 255) return InvalidArgumentError(rule);
  for (char c : image) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-' || c == '/' || c == ':' || c == '@';
    if (!ok) {
      std::string shown = c == ' '                   ? "a space"
                          : (c >= 0x21 && c <= 0x7e) ? std::string("'") + c + "'"
                                                     : "a control byte";
      return InvalidArgumentError(rule + ", not one with " + shown);
    }
  }
  const char first = image.front();
  if (!((first >= 'a' && first <= 'z') || (first >= 'A' && first <= 'Z') || (first >= '0' && first <= '9'))) {
    return InvalidArgumentError(rule);
  }
  return Status::Ok();
}

// `text` cut to `max` bytes with anything but printable ASCII replaced by '?', safe to echo in an error.
inline std::string Printable(std::string_view text, size_t max = 64) {
  std::string out(text.substr(0, max));
  for (char& c : out) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return out;
}

// [A-Za-z_][A-Za-z0-9_]*, not reserved (XPOOL_*, set by the agent).
inline Status CheckEnvName(std::string_view name) {
  const std::string path = "env." + Printable(name);
  if (name.empty() || name.size() > kMaxEnvNameLength) {
    return InvalidArgumentError("env names must be 1..256 characters");
  }
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || (i > 0 && c >= '0' && c <= '9');
    if (!ok) {
      return InvalidArgumentError("env name '" + Printable(name) + "' must match [A-Za-z_][A-Za-z0-9_]*");
    }
  }
  if (name.rfind("XPOOL_", 0) == 0) return InvalidArgumentError(path + " is reserved (XPOOL_* is set by xpool)");
  return Status::Ok();
}

}  // namespace xpool::job_spec_limits
