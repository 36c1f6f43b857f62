#include "common/units.h"

#include <array>
#include <utility>

namespace xpool {
namespace {

std::string Quoted(std::string_view text) {
  // Built by appends: GCC 12 at -O3 reports a false -Wrestrict for `"\"" + std::string(text)`.
  std::string out;
  out.reserve(text.size() + 2);
  out.push_back('"');
  out.append(text);
  out.push_back('"');
  return out;
}

// Splits "1.5Gi" into a decimal number with up to `max_decimals` fraction digits, scaled by 10^max_decimals,
// and the suffix that follows.
Status ParseScaledDecimal(std::string_view text, int max_decimals, int64_t* scaled, std::string_view* suffix) {
  size_t pos = 0;
  int64_t whole = 0;
  bool any_digit = false;
  while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
    if (__builtin_mul_overflow(whole, int64_t{10}, &whole) ||
        __builtin_add_overflow(whole, int64_t{text[pos] - '0'}, &whole)) {
      return InvalidArgumentError(Quoted(text) + " is too large");
    }
    any_digit = true;
    ++pos;
  }
  int64_t fraction = 0;
  int decimals = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (decimals == max_decimals) {
        return InvalidArgumentError(Quoted(text) + " has more than " + std::to_string(max_decimals) + " decimals");
      }
      fraction = fraction * 10 + (text[pos] - '0');
      ++decimals;
      any_digit = true;
      ++pos;
    }
  }
  if (!any_digit) return InvalidArgumentError(Quoted(text) + " is not a number");
  for (int i = decimals; i < max_decimals; ++i) fraction *= 10;
  int64_t scale = 1;
  for (int i = 0; i < max_decimals; ++i) scale *= 10;
  if (__builtin_mul_overflow(whole, scale, scaled) || __builtin_add_overflow(*scaled, fraction, scaled)) {
    return InvalidArgumentError(Quoted(text) + " is too large");
  }
  *suffix = text.substr(pos);
  return Status::Ok();
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

Result<int64_t> ParseNonNegativeInt(std::string_view text) {
  if (text.empty()) return InvalidArgumentError("empty number");
  int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return InvalidArgumentError(Quoted(text) + " is not a non-negative integer");
    if (__builtin_mul_overflow(value, int64_t{10}, &value) || __builtin_add_overflow(value, int64_t{c - '0'}, &value)) {
      return InvalidArgumentError(Quoted(text) + " is too large");
    }
  }
  return value;
}

Result<int64_t> ParseMemoryMiB(std::string_view raw) {
  std::string_view text = Trim(raw);
  if (text.empty()) return InvalidArgumentError("memory is empty");
  if (text.front() == '-') return InvalidArgumentError("memory " + Quoted(text) + " is negative");
  constexpr int kDecimals = 3;
  int64_t scaled = 0;  // value × 1000
  std::string_view suffix;
  RETURN_IF_ERROR(ParseScaledDecimal(text, kDecimals, &scaled, &suffix).WithContext("memory"));
  // Bytes per unit for each suffix; a bare number is MiB.
  struct Unit {
    std::string_view suffix;
    int64_t bytes;
  };
  constexpr int64_t kKi = 1024, kMi = kKi * 1024, kGi = kMi * 1024, kTi = kGi * 1024;
  static constexpr std::array<Unit, 10> kUnits = {{{"", kMi},
                                                   {"Ki", kKi},
                                                   {"Mi", kMi},
                                                   {"Gi", kGi},
                                                   {"Ti", kTi},
                                                   {"K", 1000},
                                                   {"M", 1000 * 1000},
                                                   {"G", 1000LL * 1000 * 1000},
                                                   {"T", 1000LL * 1000 * 1000 * 1000},
                                                   {"B", 1}}};
  for (const Unit& unit : kUnits) {
    if (unit.suffix != suffix) continue;
    // bytes × 1000 = scaled × unit.bytes; MiB = ceil(bytes / Mi). Use 128-bit to avoid overflow.
    __int128 bytes_x1000 = static_cast<__int128>(scaled) * unit.bytes;
    __int128 denom = static_cast<__int128>(kMi) * 1000;
    __int128 mib = (bytes_x1000 + denom - 1) / denom;
    bool binary_exact_needed = unit.suffix == "Ki" || unit.suffix == "B" || unit.suffix == "K";
    if (binary_exact_needed && bytes_x1000 % denom != 0) {
      return InvalidArgumentError("memory " + Quoted(text) + " is not a whole number of MiB");
    }
    if (mib > (static_cast<__int128>(1) << 50)) {
      return InvalidArgumentError("memory " + Quoted(text) + " is too large");
    }
    return static_cast<int64_t>(mib);
  }
  return InvalidArgumentError("memory " + Quoted(text) +
                              " has an unknown unit (use Mi, Gi, Ti, or a bare number of MiB)");
}

Result<int64_t> ParseCpuMilli(std::string_view raw) {
  std::string_view text = Trim(raw);
  if (text.empty()) return InvalidArgumentError("cpu is empty");
  if (text.front() == '-') return InvalidArgumentError("cpu " + Quoted(text) + " is negative");
  if (text.back() == 'm') {
    auto milli = ParseNonNegativeInt(text.substr(0, text.size() - 1));
    if (!milli.ok()) return InvalidArgumentError("cpu " + Quoted(text) + " is not a number of millicores");
    return *milli;
  }
  int64_t scaled = 0;
  std::string_view suffix;
  RETURN_IF_ERROR(ParseScaledDecimal(text, 3, &scaled, &suffix).WithContext("cpu"));
  if (!suffix.empty()) {
    return InvalidArgumentError("cpu " + Quoted(text) + " has an unknown unit (use cores or 'm')");
  }
  return scaled;
}

Result<int> ParsePercent(std::string_view raw) {
  std::string_view text = Trim(raw);
  if (!text.empty() && text.back() == '%') text.remove_suffix(1);
  if (!text.empty() && text.front() == '-') {
    return InvalidArgumentError("percent " + Quoted(raw) + " is negative");
  }
  auto value = ParseNonNegativeInt(text);
  if (!value.ok()) return InvalidArgumentError("percent " + Quoted(raw) + " is not an integer");
  if (*value > 100) return InvalidArgumentError("percent " + Quoted(raw) + " is above 100");
  return static_cast<int>(*value);
}

std::string FormatMemoryMiB(int64_t mib) {
  if (mib != 0 && mib % (1024 * 1024) == 0) return std::to_string(mib / (1024 * 1024)) + "Ti";
  if (mib != 0 && mib % 1024 == 0) return std::to_string(mib / 1024) + "Gi";
  return std::to_string(mib) + "Mi";
}

std::string FormatGiB(int64_t mib) {
  const bool negative = mib < 0;
  const int64_t tenths = ((negative ? -mib : mib) * 10 + 512) / 1024;
  return (negative && tenths != 0 ? "-" : "") + std::to_string(tenths / 10) + "." + std::to_string(tenths % 10);
}

std::string FormatMilliUnits(int64_t milli) {
  const bool negative = milli < 0;
  const int64_t m = negative ? -milli : milli;
  std::string out = (negative ? "-" : "") + std::to_string(m / 1000);
  if (m % 1000 != 0) {
    std::string frac = std::to_string(1000 + m % 1000).substr(1);  // three digits
    while (frac.back() == '0') frac.pop_back();
    out += "." + frac;
  }
  return out;
}

std::string FormatDevicePercent(int64_t milli) {
  // milli / 10 percent; one decimal only when it is not whole.
  std::string out = FormatMilliUnits(milli * 100);
  const size_t dot = out.find('.');
  if (dot != std::string::npos && out.size() > dot + 2) out.resize(dot + 2);
  return out + "%";
}

}  // namespace xpool
