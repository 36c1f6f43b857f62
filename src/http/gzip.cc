#include "http/gzip.h"

#include <zlib.h>

#include <algorithm>
#include <optional>
#include <utility>
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

// `text` as stored blocks (RFC 1951 §3.2.4) of at most 65,535 bytes: a byte with BFINAL = 0, BTYPE = 00 (pieces
// end byte-aligned, so the padding is the rest of that byte), LEN and its complement, then the bytes.
void AppendStoredBlocks(std::string* out, std::string_view text) {
  for (size_t at = 0; at < text.size();) {
    const size_t n = std::min<size_t>(0xffff, text.size() - at);
    out->push_back('\0');
    for (const uint16_t v : {static_cast<uint16_t>(n), static_cast<uint16_t>(~n)}) {
      out->push_back(static_cast<char>(v & 0xff));
      out->push_back(static_cast<char>(v >> 8));
    }
    out->append(text.substr(at, n));
    at += n;
  }
}

}  // namespace

struct Deflater::Stream {
  z_stream z{};
  bool ready = false;  // deflateInit2 succeeded
};

Deflater::Deflater(int level) : stream_(std::make_unique<Stream>()) {
  // Raw deflate (negative window bits): the gzip header and trailer are GzipWriter's.
  stream_->ready = deflateInit2(&stream_->z, level, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK;
}

Deflater::~Deflater() {
  if (stream_->ready) deflateEnd(&stream_->z);
}

DeflatedText Deflater::Deflate(std::string_view text) {
  DeflatedText out;
  out.size = text.size();
  out.crc32 = 0;
  if (!stream_->ready) {  // zlib had no memory: the text uncompressed, still a valid piece
    out.crc32 =
        static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(text.data()), static_cast<uInt>(text.size())));
    AppendStoredBlocks(&out.deflate, text);
    out.crc32_shift = static_cast<uint32_t>(crc32_combine_gen(static_cast<z_off_t>(text.size())));
    return out;
  }
  z_stream& z = stream_->z;
  deflateReset(&z);
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
  out.crc32_shift = static_cast<uint32_t>(crc32_combine_gen(static_cast<z_off_t>(text.size())));
  return out;
}

DeflatedText DeflateText(std::string_view text, int level) { return Deflater(level).Deflate(text); }

GzipWriter::GzipWriter() : crc32_(static_cast<uint32_t>(crc32(0, nullptr, 0))) {
  // ID1 ID2, CM = deflate, no flags, no time, no extra flags, OS = Unix (RFC 1952 §2.3).
  out_.append("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", 10);
}

void GzipWriter::Append(const DeflatedText& piece) {
  FlushPlain();
  out_.append(piece.deflate);
  crc32_ = static_cast<uint32_t>(crc32_combine_op(crc32_, piece.crc32, piece.crc32_shift));
  size_ += piece.size;
}

void GzipWriter::AppendPlain(std::string_view text) { plain_.append(text); }

void GzipWriter::FlushPlain() {
  AppendStoredBlocks(&out_, plain_);
  crc32_ = static_cast<uint32_t>(
      crc32(crc32_, reinterpret_cast<const Bytef*>(plain_.data()), static_cast<uInt>(plain_.size())));
  size_ += plain_.size();
  plain_.clear();
}

std::string GzipWriter::Finish() && {
  FlushPlain();
  out_.append("\x03\x00", 2);  // an empty final block with fixed codes: BFINAL = 1, BTYPE = 01, end of block
  AppendLittleEndian32(&out_, crc32_);
  AppendLittleEndian32(&out_, static_cast<uint32_t>(size_));  // ISIZE: the length modulo 2^32
  return std::move(out_);
}

std::string GzipOf(std::initializer_list<const DeflatedText*> pieces) {
  GzipWriter writer;
  for (const DeflatedText* p : pieces) writer.Append(*p);
  return std::move(writer).Finish();
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
