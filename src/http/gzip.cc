#include "http/gzip.h"

#include <zlib.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "common/text.h"
#include "http/internal/header_text.h"

namespace xpool::http {
namespace {

using internal::ForEachListElement;
using internal::LowerAscii;
using internal::TrimBlanks;

// A weight (RFC 9110 §12.4.2, "q=0.5") is zero when it is 0 with only zeros after the point.
bool WeightIsZero(std::string_view q) {
  if (q.empty() || q.front() != '0') return false;
  q.remove_prefix(1);
  if (q.empty()) return true;
  if (q.front() != '.') return false;
  return std::all_of(q.begin() + 1, q.end(), [](char c) { return c == '0'; });
}

// Whether one Accept-Encoding element ("gzip;q=0.8") takes its coding: any weight but zero.
bool ElementAccepts(std::string_view element) {
  const std::vector<std::string_view> parts = SplitText(element, ';');
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string param = LowerAscii(TrimBlanks(parts[i]));
    if (param.rfind("q=", 0) == 0) return !WeightIsZero(TrimBlanks(std::string_view(param).substr(2)));
  }
  return true;
}

void AppendLittleEndian32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace

DeflatedText DeflateText(std::string_view text, int level) {
  DeflatedText out;
  out.size = text.size();
  out.crc32 = 0;
  z_stream z{};
  // Raw deflate (negative window bits): the gzip header and trailer are GzipOf's.
  if (deflateInit2(&z, level, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) return out;
  out.deflate.resize(deflateBound(&z, text.size()) + 16);
  z.next_out = reinterpret_cast<Bytef*>(out.deflate.data());
  z.avail_out = static_cast<uInt>(out.deflate.size());
  constexpr size_t kMaxChunk = size_t{1} << 30;  // zlib counts input in uInt
  for (size_t at = 0;;) {
    const size_t chunk = std::min(kMaxChunk, text.size() - at);
    const auto* in = reinterpret_cast<const Bytef*>(text.data() + at);
    out.crc32 = static_cast<uint32_t>(crc32(out.crc32, in, static_cast<uInt>(chunk)));
    z.next_in = const_cast<Bytef*>(in);
    z.avail_in = static_cast<uInt>(chunk);
    at += chunk;
    const bool last = at == text.size();
    do {
      if (z.avail_out == 0) {
        const size_t used = out.deflate.size();
        out.deflate.resize(used * 2);
        z.next_out = reinterpret_cast<Bytef*>(out.deflate.data() + used);
        z.avail_out = static_cast<uInt>(out.deflate.size() - used);
      }
      deflate(&z, last ? Z_SYNC_FLUSH : Z_NO_FLUSH);
    } while (z.avail_in > 0 || (last && z.avail_out == 0));
    if (last) break;
  }
  out.deflate.resize(out.deflate.size() - z.avail_out);
  deflateEnd(&z);
  return out;
}

std::string GzipOf(std::initializer_list<const DeflatedText*> pieces) {
  size_t bytes = 10 + 2 + 8;
  for (const DeflatedText* p : pieces) bytes += p->deflate.size();
  std::string out;
  out.reserve(bytes);
  // ID1 ID2, CM = deflate, no flags, no time, no extra flags, OS = Unix (RFC 1952 §2.3).
  out.append("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", 10);
  uint32_t crc = static_cast<uint32_t>(crc32(0, nullptr, 0));
  uint64_t size = 0;
  for (const DeflatedText* p : pieces) {
    out.append(p->deflate);
    crc = static_cast<uint32_t>(crc32_combine(crc, p->crc32, static_cast<z_off_t>(p->size)));
    size += p->size;
  }
  out.append("\x03\x00", 2);  // an empty final block with fixed codes: BFINAL = 1, BTYPE = 01, end of block
  AppendLittleEndian32(&out, crc);
  AppendLittleEndian32(&out, static_cast<uint32_t>(size));  // ISIZE: the length modulo 2^32
  return out;
}

bool AcceptsGzip(std::string_view accept_encoding) {
  std::optional<bool> gzip, any;
  ForEachListElement(accept_encoding, [&](std::string_view element) {
    const std::string coding = LowerAscii(TrimBlanks(element.substr(0, element.find(';'))));
    if (coding == "gzip" || coding == "x-gzip") gzip = ElementAccepts(element);
    if (coding == "*") any = ElementAccepts(element);
  });
  return gzip.value_or(any.value_or(false));
}

}  // namespace xpool::http
