#include "k8s/quantity.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <limits>

namespace xpool::k8s {
namespace {

using Int128 = __int128;

constexpr Int128 kNanosPerUnit = 1'000'000'000;
constexpr Int128 kMax128 = std::numeric_limits<Int128>::max();
// BinarySI values are capped at 2^63-1 units, as Kubernetes caps them.
constexpr Int128 kBinaryCapNanos = static_cast<Int128>(std::numeric_limits<int64_t>::max()) * kNanosPerUnit;
// A binary-suffixed number with more significant digits than this is refused (its product with 2^60 would not
// fit 128 bits); Kubernetes accepts it, no resource needs it.
constexpr size_t kMaxBinaryDigits = 20;

struct Pieces {
  bool positive = true;
  std::string_view num;    // integer digits without leading zeros ("0" when none)
  std::string_view denom;  // fractional digits
  std::string_view suffix;
};

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// A character for a message: "x" when printable ASCII, else its byte value (a lone byte of a UTF-8 sequence
// would make the message invalid UTF-8, which JSON encoders refuse).
std::string Describe(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return "\"" + std::string(1, c) + "\"";
  constexpr char kHex[] = "0123456789ABCDEF";
  return std::string("byte 0x") + kHex[u >> 4] + kHex[u & 15];
}

// apimachinery's parseQuantityString: sign, integer digits, fractional digits, then the suffix (letters from
// "eEinumkKMGTP", optionally followed by a signed integer for an exponent).
Result<Pieces> Split(std::string_view s) {
  Pieces p;
  size_t pos = 0;
  const size_t end = s.size();
  if (pos < end && (s[0] == '-' || s[0] == '+')) {
    p.positive = s[0] == '+';
    ++pos;
  }
  while (pos < end && s[pos] == '0') ++pos;
  if (pos >= end) {
    p.num = "0";
    return p;
  }
  size_t start = pos;
  while (pos < end && IsDigit(s[pos])) ++pos;
  p.num = pos == start ? std::string_view("0") : s.substr(start, pos - start);
  if (pos < end && s[pos] == '.') {
    ++pos;
    start = pos;
    while (pos < end && IsDigit(s[pos])) ++pos;
    p.denom = s.substr(start, pos - start);
  }
  const size_t suffix_start = pos;
  constexpr std::string_view kSuffixChars = "eEinumkKMGTP";
  while (pos < end && kSuffixChars.find(s[pos]) != std::string_view::npos) ++pos;
  if (pos < end && (s[pos] == '-' || s[pos] == '+')) ++pos;
  while (pos < end && IsDigit(s[pos])) ++pos;
  if (pos < end) return InvalidArgumentError("is not a quantity (unexpected " + Describe(s[pos]) + ")");
  p.suffix = s.substr(suffix_start);
  return p;
}

struct Suffix {
  int base = 10;  // 10: value × 10^exponent; 2: value × 2^exponent
  int64_t exponent = 0;
  KubeQuantity::Format format = KubeQuantity::Format::kDecimalSI;
};

Result<Suffix> Interpret(std::string_view suffix) {
  struct Entry {
    std::string_view text;
    int base;
    int exponent;
  };
  static constexpr Entry kTable[] = {{"n", 10, -9}, {"u", 10, -6}, {"m", 10, -3}, {"", 10, 0},
                                     {"k", 10, 3},  {"M", 10, 6},  {"G", 10, 9},  {"T", 10, 12},
                                     {"P", 10, 15}, {"E", 10, 18}, {"Ki", 2, 10}, {"Mi", 2, 20},
                                     {"Gi", 2, 30}, {"Ti", 2, 40}, {"Pi", 2, 50}, {"Ei", 2, 60}};
  for (const Entry& e : kTable) {
    if (e.text == suffix) {
      return Suffix{e.base, e.exponent,
                    e.base == 2 ? KubeQuantity::Format::kBinarySI : KubeQuantity::Format::kDecimalSI};
    }
  }
  const std::string unknown = "has an unknown suffix \"" + std::string(suffix) +
                              "\" (use Ki Mi Gi Ti Pi Ei, n u m k M G T P E, or an exponent such as e3)";
  if (suffix.size() < 2 || (suffix[0] != 'e' && suffix[0] != 'E')) return InvalidArgumentError(unknown);
  std::string digits(suffix.substr(1));
  size_t first = digits[0] == '+' || digits[0] == '-' ? 1 : 0;
  if (first >= digits.size() ||
      !std::all_of(digits.begin() + static_cast<std::ptrdiff_t>(first), digits.end(), IsDigit)) {
    return InvalidArgumentError(unknown);
  }
  errno = 0;
  const long long exponent = std::strtoll(digits.c_str(), nullptr, 10);
  constexpr long long kMaxExponent = std::numeric_limits<int32_t>::max();
  if (errno == ERANGE || exponent > kMaxExponent || exponent < -kMaxExponent) {
    return InvalidArgumentError("has an exponent out of range");
  }
  return Suffix{10, exponent, KubeQuantity::Format::kDecimalExponent};
}

// digits (no sign) as an integer; false on overflow.
bool ToInt(std::string_view digits, Int128* out) {
  Int128 v = 0;
  for (char c : digits) {
    if (v > (kMax128 - (c - '0')) / 10) return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

bool MulPow10(Int128 v, int64_t power, Int128* out) {
  for (int64_t i = 0; i < power; ++i) {
    if (v > kMax128 / 10) return false;
    v *= 10;
  }
  *out = v;
  return true;
}

Int128 Pow10(int power) {
  Int128 v = 1;
  for (int i = 0; i < power; ++i) v *= 10;
  return v;
}

// ceil(digits × 10^shift) for a digit string without leading zeros; false when it does not fit.
bool ScaleDecimal(std::string_view digits, int64_t shift, Int128* out) {
  if (shift >= 0) {
    Int128 v = 0;
    if (!ToInt(digits, &v)) return false;
    if (v == 0) {
      *out = 0;
      return true;
    }
    return MulPow10(v, shift, out);
  }
  // Drop the last -shift digits, rounding up when any of them is not zero.
  const int64_t keep = static_cast<int64_t>(digits.size()) + shift;
  std::string_view kept = keep > 0 ? digits.substr(0, static_cast<size_t>(keep)) : std::string_view();
  std::string_view dropped = keep > 0 ? digits.substr(static_cast<size_t>(keep)) : digits;
  Int128 v = 0;
  if (!ToInt(kept, &v)) return false;
  if (dropped.find_first_not_of('0') != std::string_view::npos) ++v;
  *out = v;
  return true;
}

std::string ToString(Int128 v) {
  if (v == 0) return "0";
  const bool negative = v < 0;
  unsigned __int128 u = negative ? static_cast<unsigned __int128>(-(v + 1)) + 1 : static_cast<unsigned __int128>(v);
  std::string out;
  while (u != 0) {
    out += static_cast<char>('0' + static_cast<int>(u % 10));
    u /= 10;
  }
  if (negative) out += '-';
  std::reverse(out.begin(), out.end());
  return out;
}

std::string DecimalSuffix(int exponent, KubeQuantity::Format format) {
  if (exponent == 0) return "";
  if (format == KubeQuantity::Format::kDecimalSI && exponent >= -9 && exponent <= 18) {
    static constexpr const char* kNames[] = {"n", "u", "m", "", "k", "M", "G", "T", "P", "E"};
    return kNames[(exponent + 9) / 3];
  }
  return "e" + std::to_string(exponent);  // DecimalExponent, or DecimalSI past "E"
}

}  // namespace

Result<KubeQuantity> KubeQuantity::Parse(std::string_view text) {
  if (text.empty()) return InvalidArgumentError("is empty (write a quantity such as 8000, 8k or 500m)");
  ASSIGN_OR_RETURN(Pieces p, Split(text));
  ASSIGN_OR_RETURN(Suffix s, Interpret(p.suffix));
  // The significant digits and the power of ten that places the decimal point.
  std::string digits = std::string(p.num == "0" ? "" : p.num) + std::string(p.denom);
  const size_t lead = digits.find_first_not_of('0');
  digits = lead == std::string::npos ? "" : digits.substr(lead);
  const int64_t fraction = static_cast<int64_t>(p.denom.size());
  Format format = s.format;
  Int128 nanos = 0;
  if (s.base == 10) {
    if (!ScaleDecimal(digits, s.exponent - fraction + 9, &nanos)) return InvalidArgumentError("is too large");
  } else {
    if (digits.size() > kMaxBinaryDigits) return InvalidArgumentError("has too many digits for a binary suffix");
    Int128 v = 0;
    (void)ToInt(digits, &v);  // at most 20 digits: fits
    v <<= s.exponent;         // < 10^20 × 2^60 < 2^127
    if (fraction <= 9) {
      nanos = v > kMax128 / Pow10(9) ? kMax128 : v * Pow10(static_cast<int>(9 - fraction));
    } else if (fraction - 9 > 38) {
      nanos = v == 0 ? 0 : 1;
    } else {
      const Int128 divisor = Pow10(static_cast<int>(fraction - 9));
      nanos = v / divisor + (v % divisor != 0 ? 1 : 0);
    }
    if (nanos > kBinaryCapNanos) nanos = kBinaryCapNanos;
    if (nanos > 0 && nanos < kNanosPerUnit) format = Format::kDecimalSI;
  }
  return KubeQuantity(p.positive ? nanos : -nanos, format);
}

Result<KubeQuantity> KubeQuantity::FromDecimal(int64_t mantissa, int exponent, Format format) {
  const bool positive = mantissa >= 0;
  const std::string digits = ToString(positive ? Int128(mantissa) : -Int128(mantissa));
  Int128 nanos = 0;
  if (!ScaleDecimal(digits == "0" ? "" : digits, exponent + 9, &nanos)) return InvalidArgumentError("is too large");
  return KubeQuantity(positive ? nanos : -nanos, format);
}

std::string KubeQuantity::Canonical() const {
  if (nanos_ == 0) return "0";
  if (nanos_ < 0) return "-" + KubeQuantity(-nanos_, format_).Canonical();
  if (format_ == Format::kBinarySI && nanos_ >= 1024 * kNanosPerUnit && nanos_ % kNanosPerUnit == 0) {
    Int128 units = nanos_ / kNanosPerUnit;
    int power = 0;
    while (units % 1024 == 0 && power < 6) {
      units /= 1024;
      ++power;
    }
    static constexpr const char* kNames[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    return ToString(units) + kNames[power];
  }
  // Decimal: move every factor of ten into the exponent, then back down to a multiple of three.
  const Format format = format_ == Format::kBinarySI ? Format::kDecimalSI : format_;
  Int128 amount = nanos_;
  int exponent = -9;
  while (amount % 10 == 0) {
    amount /= 10;
    ++exponent;
  }
  while (exponent % 3 != 0) {
    amount *= 10;
    --exponent;
  }
  return ToString(amount) + DecimalSuffix(exponent, format);
}

Result<int64_t> KubeQuantity::WholeUnits() const {
  if (nanos_ < 0) return InvalidArgumentError("is negative");
  if (nanos_ % kNanosPerUnit != 0) return InvalidArgumentError("is not a whole number");
  const Int128 units = nanos_ / kNanosPerUnit;
  if (units > std::numeric_limits<int64_t>::max()) return InvalidArgumentError("is too large");
  return static_cast<int64_t>(units);
}

Result<std::string> CanonicalQuantity(std::string_view text) {
  ASSIGN_OR_RETURN(KubeQuantity q, KubeQuantity::Parse(text));
  return q.Canonical();
}

Result<int64_t> WholeQuantity(std::string_view text, std::string_view field) {
  Result<KubeQuantity> q = KubeQuantity::Parse(text);
  Result<int64_t> units = q.ok() ? q->WholeUnits() : Result<int64_t>(q.status());
  if (!units.ok()) {
    return InvalidArgumentError(std::string(field) + " \"" + std::string(text) + "\" " + units.status().message());
  }
  return units;
}

}  // namespace xpool::k8s
