#pragma once
// KubeQuantity: a Kubernetes resource quantity (apimachinery's resource.Quantity), parsed and printed exactly as
// the API server does — the one parser the extender, the webhook and the device plugin read pod resources with.
//
// Grammar (resource.Quantity):
//   <quantity>        ::= <signedNumber><suffix>
//   <suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI>
//   <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei                 (powers of 1024)
//   <decimalSI>       ::= n | u | m | "" | k | M | G | T | P | E       (powers of 1000)
//   <decimalExponent> ::= "e" <signedNumber> | "E" <signedNumber>     (the exponent is an integer)
//   <signedNumber>    ::= <number> | <sign><number>,  <sign> ::= "+" | "-"
//   <number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
// No spaces anywhere. As in Kubernetes, a value finer than 10^-9 is rounded up (away from zero) to the next
// nano-unit, a BinarySI value is capped at 2^63-1, and a BinarySI value below 1 becomes DecimalSI.
//
// Canonical form (what the API server writes back, Quantity.String()): no precision lost, no fractional digits,
// the largest suffix of the quantity's format: 8000 → "8k", 1.5 → "1500m", 1024Mi → "1Gi", 1.5Gi → "1536Mi",
// 1e2 → "100", 1e3 → "1e3"; a BinarySI value below 1024 or not a whole number is written in DecimalSI.
//
// Values are integers: the exact value in nano-units (10^-9) in 128 bits. A decimal value too large for that
// (beyond ~10^29) is refused as too large, where Kubernetes would keep it; no device resource comes near.
// Value type; thread-compatible. Functions are stateless and thread-safe.
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace xpool::k8s {

class KubeQuantity {
 public:
  enum class Format : uint8_t { kDecimalSI, kBinarySI, kDecimalExponent };

  // Parses `text` by the grammar above. InvalidArgument says what is wrong (the caller adds the field's name).
  static Result<KubeQuantity> Parse(std::string_view text);
  // mantissa × 10^exponent in `format` (tests and callers that build quantities); rounded up to nano-units.
  static Result<KubeQuantity> FromDecimal(int64_t mantissa, int exponent, Format format);

  // The canonical text, as the API server serializes the quantity.
  std::string Canonical() const;

  // The value as a whole number of units (for counts, MiB, percent). InvalidArgument "is not a whole number",
  // "is negative" or "is too large".
  Result<int64_t> WholeUnits() const;

  Format format() const { return format_; }
  // The exact value in nano-units.
  __int128 nanos() const { return nanos_; }
  bool operator==(const KubeQuantity& other) const = default;

 private:
  KubeQuantity(__int128 nanos, Format format) : nanos_(nanos), format_(format) {}

  __int128 nanos_ = 0;
  Format format_ = Format::kDecimalSI;
};

// The canonical text of a quantity written as `text` ("8000" → "8k"); InvalidArgument when it does not parse.
Result<std::string> CanonicalQuantity(std::string_view text);

// A quantity that must be a non-negative whole number of units, with the error naming `field`, e.g.
//   nvidia.com/gpumem "8.5k" is not a whole number
Result<int64_t> WholeQuantity(std::string_view text, std::string_view field);

}  // namespace xpool::k8s
