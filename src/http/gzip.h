#pragma once
// Gzip answers assembled from pieces compressed apart (RFC 1952 around RFC 1951 deflate), so a part of a body
// that changes rarely is compressed once and sent many times next to a part compressed at each request: each
// piece is a raw deflate stream of its own (no back-reference leaves it) ended by a sync flush, and GzipWriter joins
// them into one gzip member — header, the pieces in order with short fresh texts between them as stored
// (uncompressed) blocks, an empty final block, and the CRC-32 and length of the whole text (crc32_combine_op). Any
// gzip reader reads the result as one stream.
// Plain functions and values; a GzipWriter is owned by one caller (not thread-safe); the rest is stateless.
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>

namespace xpool::http {

// One piece: `text` as a raw deflate stream ended by a sync flush (not final), with the text's CRC-32 and length.
struct DeflatedText {
  std::string deflate;
  uint32_t crc32 = 0;
  uint64_t size = 0;
  // zlib's crc32_combine_gen(size), by which GzipWriter folds this piece's CRC in in one step (x^0 for no text).
  uint32_t crc32_shift = 0x80000000u;
};

// `text` compressed at zlib `level` (1 = fastest .. 9 = smallest).
DeflatedText DeflateText(std::string_view text, int level = 1);

// A compressor kept for many small pieces: zlib's ~270 KB of state is set up once, not per piece (a 1.5 KB piece
// costs ~56 µs with DeflateText, most of it that set-up). Owned by one caller; not thread-safe.
class Deflater {
 public:
  explicit Deflater(int level = 1);
  ~Deflater();
  Deflater(const Deflater&) = delete;
  Deflater& operator=(const Deflater&) = delete;

  // As DeflateText(text, level).
  DeflatedText Deflate(std::string_view text);

 private:
  struct Stream;
  std::unique_ptr<Stream> stream_;
};

// One gzip member written front to back: compressed pieces and plain text in the order appended.
class GzipWriter {
 public:
  GzipWriter();
  // A piece compressed apart (sent as it is, however often).
  void Append(const DeflatedText& piece);
  // Text sent uncompressed (stored blocks): for short parts that change at every call, not worth compressing.
  void AppendPlain(std::string_view text);
  // The whole member; the writer is spent.
  std::string Finish() &&;

 private:
  void FlushPlain();

  std::string out_;
  std::string plain_;  // appended plain text not yet written as stored blocks
  uint32_t crc32_;     // of the text so far, plain_ excluded
  uint64_t size_ = 0;  // likewise
};

// One gzip member whose content is the pieces' texts in order.
std::string GzipOf(std::initializer_list<const DeflatedText*> pieces);

// Whether an Accept-Encoding header value takes gzip (RFC 9110 12.5.3): "gzip", "x-gzip" or "*" with a weight
// above 0. An empty value takes none.
bool AcceptsGzip(std::string_view accept_encoding);

}  // namespace xpool::http
