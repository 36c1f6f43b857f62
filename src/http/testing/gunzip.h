#pragma once
// Gunzip: a gzip body read back by zlib's own gzip reader, which checks the header and the trailer's CRC-32 and
// length, for tests of gzip answers (src/http/gzip_test.cc, the server's /metrics tests). Header-only, test-only;
// stateless and thread-safe. The test links zlib (ZLIB::ZLIB).
#include <zlib.h>

#include <optional>
#include <string>

namespace xpool::testing {

// The text of one gzip member; nullopt when the member is damaged or bytes follow it.
inline std::optional<std::string> Gunzip(const std::string& gz) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return std::nullopt;
  std::string out;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  z.avail_in = static_cast<uInt>(gz.size());
  int rc = Z_OK;
  while (rc == Z_OK) {
    char buf[1 << 16];
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof(buf);
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof(buf) - z.avail_out);
  }
  const bool whole = rc == Z_STREAM_END && z.avail_in == 0;
  inflateEnd(&z);
  if (!whole) return std::nullopt;
  return out;
}

}  // namespace xpool::testing
