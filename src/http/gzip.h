#pragma once
// Gzip answers assembled from pieces compressed apart (RFC 1952 around RFC 1951 deflate), so a part of a body
// that changes rarely is compressed once and sent many times next to a part compressed at each request: each
// piece is a raw deflate stream of its own (no back-reference leaves it) ended by a sync flush, and GzipOf joins
// them into one gzip member — header, the pieces in order, an empty final block, and the CRC-32 and length of the
// whole text (crc32_combine). Any gzip reader reads the result as one stream.
// Plain functions and values; thread-safe (no shared state).
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace xpool::http {

// One piece: `text` as a raw deflate stream ended by a sync flush (not final), with the text's CRC-32 and length.
struct DeflatedText {
  std::string deflate;
  uint32_t crc32 = 0;
  uint64_t size = 0;
};

// `text` compressed at zlib `level` (1 = fastest .. 9 = smallest).
DeflatedText DeflateText(std::string_view text, int level = 1);

// One gzip member whose content is the pieces' texts in order.
std::string GzipOf(std::initializer_list<const DeflatedText*> pieces);

// Whether an Accept-Encoding header value takes gzip (RFC 9110 12.5.3): "gzip", "x-gzip" or "*" with a weight
// above 0. An empty value takes none.
bool AcceptsGzip(std::string_view accept_encoding);

}  // namespace xpool::http
