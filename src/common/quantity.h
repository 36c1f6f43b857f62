#pragma once
// Quantity: an integer count of milli-units (1000 = one CPU core, one whole device).
//
// No floats, no implicit conversions. Arithmetic through the Checked* functions reports overflow as a Status;
// the operators are for values already known to be in range (capacities and usage, far below 2^62).
// A value type; thread-compatible.
#include <compare>
#include <cstdint>
#include <string>

#include "common/status.h"

namespace xpool {

class Quantity {
 public:
  constexpr Quantity() = default;
  static constexpr Quantity FromMilli(int64_t milli) { return Quantity(milli); }
  // Whole units; fails on overflow.
  static Result<Quantity> FromUnits(int64_t units);
  static constexpr Quantity Zero() { return Quantity(0); }

  constexpr int64_t milli() const { return milli_; }
  // Whole units, rounded towards zero.
  constexpr int64_t units() const { return milli_ / 1000; }

  static Result<Quantity> CheckedAdd(Quantity a, Quantity b);
  static Result<Quantity> CheckedSub(Quantity a, Quantity b);
  static Result<Quantity> CheckedMul(Quantity a, int64_t factor);

  constexpr Quantity operator+(Quantity o) const { return Quantity(milli_ + o.milli_); }
  constexpr Quantity operator-(Quantity o) const { return Quantity(milli_ - o.milli_); }
  constexpr Quantity& operator+=(Quantity o) {
    milli_ += o.milli_;
    return *this;
  }
  constexpr Quantity& operator-=(Quantity o) {
    milli_ -= o.milli_;
    return *this;
  }
  constexpr auto operator<=>(const Quantity&) const = default;

  // "500m", "2", "1500m" → readable form: whole units when exact, else milli.
  std::string ToString() const;

 private:
  constexpr explicit Quantity(int64_t milli) : milli_(milli) {}
  int64_t milli_ = 0;
};

}  // namespace xpool
