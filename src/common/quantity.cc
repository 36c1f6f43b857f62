#include "common/quantity.h"

namespace xpool {

Result<Quantity> Quantity::FromUnits(int64_t units) {
  int64_t milli = 0;
  if (__builtin_mul_overflow(units, int64_t{1000}, &milli)) {
    return InvalidArgumentError("quantity " + std::to_string(units) + " is too large");
  }
  return Quantity(milli);
}

Result<Quantity> Quantity::CheckedAdd(Quantity a, Quantity b) {
  int64_t out = 0;
  if (__builtin_add_overflow(a.milli_, b.milli_, &out)) return InvalidArgumentError("quantity overflow");
  return Quantity(out);
}

Result<Quantity> Quantity::CheckedSub(Quantity a, Quantity b) {
  int64_t out = 0;
  if (__builtin_sub_overflow(a.milli_, b.milli_, &out)) return InvalidArgumentError("quantity overflow");
  return Quantity(out);
}

Result<Quantity> Quantity::CheckedMul(Quantity a, int64_t factor) {
  int64_t out = 0;
  if (__builtin_mul_overflow(a.milli_, factor, &out)) return InvalidArgumentError("quantity overflow");
  return Quantity(out);
}

std::string Quantity::ToString() const {
  if (milli_ % 1000 == 0) return std::to_string(milli_ / 1000);
  return std::to_string(milli_) + "m";
}

}  // namespace xpool
