#include "http/request_parser.h"

#include <algorithm>
#include <utility>

#include "http/internal/header_text.h"

namespace xpool::http {
namespace {

constexpr size_t kMaxChunkLine = 1024;  // a chunk-size line with its extensions

bool IsTokenChar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return c != '\0' && std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!IsTokenChar(c)) return false;
  }
  return true;
}

using internal::ForEachListElement;
using internal::LowerAscii;
using internal::TrimBlanks;

// Decimal digits only, at most 18 of them (no overflow); false otherwise.
bool ParseLength(std::string_view s, size_t* out) {
  if (s.empty() || s.size() > 18) return false;
  size_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<size_t>(c - '0');
  }
  *out = v;
  return true;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

void RequestParser::Reset() {
  phase_ = Phase::kHead;
  request_ = HttpRequest{};
  pos_ = scan_ = remaining_ = declared_ = trailer_bytes_ = 0;
  error_status_ = 0;
  error_message_.clear();
}

bool RequestParser::Refuse(int status, std::string message) {
  Fail(status, std::move(message));
  return false;
}

ParseState RequestParser::Fail(int status, std::string message) {
  phase_ = Phase::kError;
  error_status_ = status;
  error_message_ = std::move(message);
  return ParseState::kError;
}

bool RequestParser::NextLine(std::string_view buffer, std::string_view* line) {
  const size_t nl = buffer.find('\n', pos_);
  if (nl == std::string_view::npos) return false;
  *line = buffer.substr(pos_, nl - pos_);
  if (!line->empty() && line->back() == '\r') line->remove_suffix(1);
  pos_ = nl + 1;
  return true;
}

ParseState RequestParser::Parse(std::string_view buffer) {
  if (phase_ == Phase::kError) return ParseState::kError;
  if (phase_ == Phase::kHead) {
    ParseState s = ParseHead(buffer);
    if (s == ParseState::kNeedHead || s == ParseState::kError) return s;
  }
  if (phase_ == Phase::kLengthBody) {
    const size_t take = std::min(buffer.size() - pos_, remaining_);
    request_.body.append(buffer.substr(pos_, take));
    pos_ += take;
    remaining_ -= take;
    if (remaining_ == 0) phase_ = Phase::kDone;
  } else if (phase_ != Phase::kDone) {
    ParseState s = ParseChunked(buffer);
    if (s == ParseState::kError) return s;
  }
  return phase_ == Phase::kDone ? ParseState::kComplete : ParseState::kNeedBody;
}

ParseState RequestParser::ParseHead(std::string_view buffer) {
  // Empty lines before a request line are ignored (RFC 9112 section 2.2); they count against the head limit.
  while (scan_ == pos_ && pos_ < buffer.size() && (buffer[pos_] == '\n' || buffer[pos_] == '\r')) {
    if (buffer[pos_] == '\r' && pos_ + 1 >= buffer.size()) break;
    if (buffer[pos_] == '\r' && buffer[pos_ + 1] != '\n') return Fail(400, "bad request line");
    pos_ += buffer[pos_] == '\r' ? 2 : 1;
    scan_ = pos_;
  }
  // Find the empty line that ends the head, resuming where the last call stopped.
  size_t head_end = std::string_view::npos;
  while (true) {
    const size_t nl = buffer.find('\n', scan_);
    if (nl == std::string_view::npos) break;
    const size_t len = nl - scan_;
    const bool empty = len == 0 || (len == 1 && buffer[scan_] == '\r');
    scan_ = nl + 1;
    if (empty && nl > pos_) {
      head_end = scan_;
      break;
    }
  }
  const size_t limit = limits_.max_header_bytes;
  if (head_end == std::string_view::npos ? buffer.size() > limit : head_end > limit) {
    const size_t first_nl = buffer.find('\n', pos_);
    if (first_nl == std::string_view::npos || first_nl > limit) {
      return Fail(414, "request line longer than " + std::to_string(limit) + " bytes");
    }
    return Fail(431, "request headers larger than " + std::to_string(limit) + " bytes");
  }
  if (head_end == std::string_view::npos) return ParseState::kNeedHead;

  std::string_view line;
  if (!NextLine(buffer, &line) || !ParseRequestLine(line)) return ParseState::kError;
  while (NextLine(buffer, &line) && !line.empty()) {
    if (!ParseHeaderLine(line)) return ParseState::kError;
  }
  if (!DecideFraming()) return ParseState::kError;
  return ParseState::kNeedBody;
}

bool RequestParser::ParseRequestLine(std::string_view line) {
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return Refuse(400, "bad request line");
  }
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (!IsToken(method) || target.empty()) {
    return Refuse(400, "bad request line");
  }
  for (char c : target) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) {
      return Refuse(400, "bad request target");
    }
  }
  if (version == "HTTP/1.1") {
    request_.version_minor = 1;
  } else if (version == "HTTP/1.0") {
    request_.version_minor = 0;
  } else if (version.size() == 8 && version.substr(0, 5) == "HTTP/" && version[6] == '.') {
    return Refuse(505, "HTTP version " + std::string(version.substr(5)) + " is not supported (use HTTP/1.1)");
  } else {
    return Refuse(400, "bad request line");
  }
  request_.method = std::string(method);
  request_.target = std::string(target);
  std::string_view path = target;
  if (path.size() > 8 && (EqualsIgnoreCase(path.substr(0, 7), "http://") ||
                          EqualsIgnoreCase(path.substr(0, 8), "https://"))) {  // absolute-form
    const size_t slash = path.find('/', path.find("//") + 2);
    path = slash == std::string_view::npos ? std::string_view("/") : path.substr(slash);
  } else if (path.front() != '/' && path != "*") {
    return Refuse(400, "bad request target");
  }
  const size_t q = path.find('?');
  if (q != std::string_view::npos) {
    request_.query = std::string(path.substr(q + 1));
    path = path.substr(0, q);
  }
  request_.path = PercentDecode(path, /*plus_is_space=*/false);
  return true;
}

bool RequestParser::ParseHeaderLine(std::string_view line) {
  if (line.front() == ' ' || line.front() == '\t') {
    return Refuse(400, "obsolete header line folding is not accepted");
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos || !IsToken(line.substr(0, colon))) {
    return Refuse(400, "bad header line");
  }
  std::string_view value = TrimBlanks(line.substr(colon + 1));
  for (char c : value) {
    if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f) {
      return Refuse(400, "bad character in header " + std::string(line.substr(0, colon)));
    }
  }
  request_.headers.emplace_back(LowerAscii(line.substr(0, colon)), std::string(value));
  return true;
}

bool RequestParser::DecideFraming() {
  bool has_length = false, chunked = false, has_coding = false, close = false, keep_alive = false;
  size_t length = 0;
  for (const auto& [name, value] : request_.headers) {
    if (name == "content-length") {
      bool bad = false;
      ForEachListElement(value, [&](std::string_view item) {
        size_t v = 0;
        if (!ParseLength(item, &v) || (has_length && v != length)) bad = true;
        has_length = true;
        length = v;
      });
      if (bad || TrimBlanks(value).empty()) return Refuse(400, "bad Content-Length");
    } else if (name == "transfer-encoding") {
      ForEachListElement(value, [&](std::string_view item) {
        // chunked must be the last and only coding: "gzip, chunked" is not decoded here.
        chunked = !has_coding && EqualsIgnoreCase(item, "chunked");
        has_coding = true;
      });
      if (!chunked) {
        return Refuse(501, "Transfer-Encoding \"" + value + "\" is not supported (only chunked)");
      }
    } else if (name == "connection") {
      ForEachListElement(value, [&](std::string_view item) {
        if (EqualsIgnoreCase(item, "close")) close = true;
        if (EqualsIgnoreCase(item, "keep-alive")) keep_alive = true;
      });
    } else if (name == "expect") {
      if (!EqualsIgnoreCase(value, "100-continue")) return Refuse(417, "unsupported Expect: " + value);
      request_.expect_continue = request_.version_minor >= 1;
    }
  }
  request_.keep_alive = !close && (request_.version_minor >= 1 || keep_alive);
  if (has_coding && (has_length || request_.version_minor == 0)) {
    return Refuse(400, "Transfer-Encoding with Content-Length or in HTTP/1.0");
  }
  if (has_length && length > limits_.max_body_bytes) {
    return Refuse(413, "body of " + std::to_string(length) + " bytes over the limit of " +
                           std::to_string(limits_.max_body_bytes) + " bytes");
  }
  if (has_coding) {
    phase_ = Phase::kChunkSize;
  } else if (length > 0) {
    phase_ = Phase::kLengthBody;
    remaining_ = declared_ = length;
  } else {
    phase_ = Phase::kDone;  // no body (RFC 9112 section 6.3: no length, no body)
  }
  return true;
}

ParseState RequestParser::ParseChunked(std::string_view buffer) {
  const size_t max_body = limits_.max_body_bytes;
  while (phase_ != Phase::kDone) {
    std::string_view line;
    switch (phase_) {
      case Phase::kChunkSize: {
        if (!NextLine(buffer, &line)) {
          if (buffer.size() - pos_ > kMaxChunkLine) return Fail(400, "chunk size line too long");
          return ParseState::kNeedBody;
        }
        if (line.size() > kMaxChunkLine) return Fail(400, "chunk size line too long");
        size_t size = 0, digits = 0;
        for (; digits < line.size() && HexValue(line[digits]) >= 0; ++digits) {
          if (digits >= 15) return Fail(400, "bad chunk size");
          size = size * 16 + static_cast<size_t>(HexValue(line[digits]));
        }
        std::string_view rest = TrimBlanks(line.substr(digits));
        if (digits == 0 || (!rest.empty() && rest.front() != ';')) return Fail(400, "bad chunk size");
        if (size > max_body - request_.body.size()) {
          return Fail(413, "body over the limit of " + std::to_string(max_body) + " bytes");
        }
        remaining_ = size;
        phase_ = size == 0 ? Phase::kTrailers : Phase::kChunkData;
        break;
      }
      case Phase::kChunkData: {
        const size_t take = std::min(buffer.size() - pos_, remaining_);
        request_.body.append(buffer.substr(pos_, take));
        pos_ += take;
        remaining_ -= take;
        if (remaining_ > 0) return ParseState::kNeedBody;
        phase_ = Phase::kChunkDataEnd;
        break;
      }
      case Phase::kChunkDataEnd: {
        if (!NextLine(buffer, &line)) {
          if (buffer.size() - pos_ >= 2) return Fail(400, "chunk data longer than its size");
          return ParseState::kNeedBody;
        }
        if (!line.empty()) return Fail(400, "chunk data longer than its size");
        phase_ = Phase::kChunkSize;
        break;
      }
      case Phase::kTrailers: {
        const size_t before = pos_;
        if (!NextLine(buffer, &line)) {
          if (trailer_bytes_ + (buffer.size() - pos_) > limits_.max_header_bytes) {
            return Fail(431, "trailers larger than " + std::to_string(limits_.max_header_bytes) + " bytes");
          }
          return ParseState::kNeedBody;
        }
        trailer_bytes_ += pos_ - before;
        if (trailer_bytes_ > limits_.max_header_bytes) {
          return Fail(431, "trailers larger than " + std::to_string(limits_.max_header_bytes) + " bytes");
        }
        if (line.empty()) phase_ = Phase::kDone;
        break;
      }
      default:
        return Fail(500, "parser in an unexpected state");
    }
  }
  return ParseState::kComplete;
}

}  // namespace xpool::http
