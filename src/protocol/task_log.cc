#include "protocol/task_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <utility>

namespace xpool::protocol {
namespace {

std::string ErrnoText(int err) { return std::strerror(err); }

// Writes all of `data`; returns 0 or the errno of the failing write.
int WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return 0;
}

std::string RotatedName(const std::string& path, int i) { return path + "." + std::to_string(i); }

// The offset record: "<inode> <stream offset of that file's first byte>".
struct OffsetRecord {
  uint64_t inode = 0;
  int64_t base = 0;
};

std::optional<OffsetRecord> ReadOffsetRecord(const std::string& path) {
  std::FILE* f = std::fopen(LogOffsetPath(path).c_str(), "re");
  if (f == nullptr) return std::nullopt;
  unsigned long long inode = 0;
  long long base = 0;
  const bool ok = std::fscanf(f, "%llu %lld", &inode, &base) == 2 && base >= 0;
  std::fclose(f);
  if (!ok) return std::nullopt;
  return OffsetRecord{inode, base};
}

// Best effort (a full disk leaves the previous record, which readers still place while its file is kept).
void WriteOffsetRecord(const std::string& path, uint64_t inode, int64_t base) {
  const std::string record = LogOffsetPath(path);
  const std::string tmp = record + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return;
  const int err = WriteAll(fd, std::to_string(inode) + " " + std::to_string(base) + "\n");
  ::close(fd);
  if (err != 0 || ::rename(tmp.c_str(), record.c_str()) != 0) ::unlink(tmp.c_str());
}

// One kept log file and the stream offset of its first byte.
struct KeptFile {
  std::string name;
  uint64_t inode = 0;
  int64_t size = 0;
  int64_t base = 0;
};

// The kept files newest first (live, .1, .2, ...) with their stream offsets, placed from the offset record: it
// names the live file, or the newest rotated one while a rotation is under way. Without a record that names a
// kept file the oldest kept file starts at 0. NotFound without a live file.
Result<std::vector<KeptFile>> KeptFiles(const std::string& path) {
  for (int attempt = 0;; ++attempt) {
    std::vector<KeptFile> files;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return NotFoundError("no log at " + path);
    files.push_back({path, st.st_ino, st.st_size, 0});
    for (int i = 1; ::stat(RotatedName(path, i).c_str(), &st) == 0; ++i) {
      files.push_back({RotatedName(path, i), st.st_ino, st.st_size, 0});
    }
    size_t anchor = files.size() - 1;
    if (const auto record = ReadOffsetRecord(path)) {
      for (size_t i = 0; i < files.size(); ++i) {
        if (files[i].inode == record->inode) {
          anchor = i;
          files[i].base = record->base;
        }
      }
    }
    for (size_t i = anchor; i > 0; --i) files[i - 1].base = files[i].base + files[i].size;
    for (size_t i = anchor + 1; i < files.size(); ++i) files[i].base = files[i - 1].base - files[i].size;
    // A rotation while the names were read shifts them: read them again (a few times at most).
    if (attempt >= 2 || (::stat(path.c_str(), &st) == 0 && st.st_ino == files[0].inode)) return files;
  }
}

// The stream offset of the kept file with `inode`; 0 when it is not kept (or there is no log).
int64_t BaseOf(const std::string& path, uint64_t inode) {
  auto files = KeptFiles(path);
  if (!files.ok()) return 0;
  for (const KeptFile& f : *files) {
    if (f.inode == inode) return f.base;
  }
  return 0;
}

}  // namespace

std::string LogOffsetPath(const std::string& path) {
  const size_t slash = path.rfind('/');
  const size_t name = slash == std::string::npos ? 0 : slash + 1;
  return path.substr(0, name) + "." + path.substr(name) + ".offset";
}

LogWriter::LogWriter(std::string path, LogLimits limits) : path_(std::move(path)), limits_(limits) {}

LogWriter::~LogWriter() {
  if (fd_ >= 0) ::close(fd_);
}

Status LogWriter::Open() {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd_ < 0) return UnavailableError("cannot open log " + path_ + ": " + ErrnoText(errno));
  (void)::fchmod(fd_, 0600);  // only the agent reads a task's log (a log of an earlier run may be 0644)
  struct stat st {};
  const bool regular = ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode);
  size_ = regular ? st.st_size : 0;
  base_ = regular ? BaseOf(path_, st.st_ino) : 0;  // a later run appending to the log counts on
  return Status::Ok();
}

std::string LogWriter::note() const {
  std::lock_guard<std::mutex> lock(note_mu_);
  return note_;
}

void LogWriter::StopWithNote(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(note_mu_);
    note_ = "logging stopped after " + std::to_string(total_.load()) + " bytes: " + why +
            " (the task keeps running; further output is discarded)";
  }
  stopped_ = true;
  if (fd_ >= 0) {
    // Best effort: the disk may have room for a short line (or not).
    (void)WriteAll(fd_, "\n[xpool] " + note() + "\n");
  }
}

bool LogWriter::Rotate() {
  const int64_t next_base = base_ + size_;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (limits_.keep <= 0) {
    ::unlink(path_.c_str());
  } else {
    ::unlink(RotatedName(path_, limits_.keep).c_str());
    for (int i = limits_.keep - 1; i >= 1; --i) {
      ::rename(RotatedName(path_, i).c_str(), RotatedName(path_, i + 1).c_str());
    }
    ::rename(path_.c_str(), RotatedName(path_, 1).c_str());
  }
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  size_ = 0;
  if (fd_ < 0) {
    StopWithNote("cannot reopen " + path_ + " after rotation: " + ErrnoText(errno));
    return false;
  }
  base_ = next_base;
  struct stat st {};
  if (::fstat(fd_, &st) == 0) WriteOffsetRecord(path_, st.st_ino, base_);
  return true;
}

void LogWriter::WriteChunk(std::string_view data) {
  if (int err = WriteAll(fd_, data); err != 0) {
    StopWithNote(err == ENOSPC ? "the log disk is full" : "write to " + path_ + " failed: " + ErrnoText(err));
    return;
  }
  size_ += static_cast<int64_t>(data.size());
  total_ += static_cast<int64_t>(data.size());
}

void LogWriter::Write(std::string_view data) {
  while (!data.empty() && !stopped_ && fd_ >= 0) {
    const int64_t room = limits_.max_bytes - size_;
    if (room <= 0) {
      if (!Rotate()) return;
      continue;
    }
    const size_t n = static_cast<size_t>(std::min<int64_t>(room, static_cast<int64_t>(data.size())));
    WriteChunk(data.substr(0, n));
    data.remove_prefix(n);
  }
}

void LogWriter::Note(std::string_view text) { Write("[xpool] " + std::string(text) + "\n"); }

std::vector<std::string> LogFiles(const std::string& path) {
  std::vector<std::string> rotated;
  struct stat st {};
  for (int i = 1; ::stat(RotatedName(path, i).c_str(), &st) == 0; ++i) rotated.push_back(RotatedName(path, i));
  std::vector<std::string> files(rotated.rbegin(), rotated.rend());
  if (::stat(path.c_str(), &st) == 0) files.push_back(path);
  return files;
}

Result<LogRange> ReadLogRange(const std::string& path, int64_t from, int64_t max_bytes) {
  ASSIGN_OR_RETURN(std::vector<KeptFile> files, KeptFiles(path));  // newest first
  const int64_t first = files.back().base;
  const int64_t end = files.front().base + files.front().size;
  if (max_bytes <= 0) max_bytes = end - first;
  LogRange out;
  out.first_offset = first;
  out.end_offset = end;
  out.offset = from < 0 ? std::max(first, end - max_bytes) : std::clamp(from, first, end);
  out.next_offset = out.offset;
  for (auto f = files.rbegin(); f != files.rend() && out.next_offset < end; ++f) {
    const int64_t want = out.offset + max_bytes - out.next_offset;
    if (want <= 0) break;
    if (out.next_offset >= f->base + f->size) continue;
    std::FILE* in = std::fopen(f->name.c_str(), "rbe");
    if (in == nullptr) break;  // rotated away meanwhile: what was read so far
    const int64_t skip = std::max<int64_t>(0, out.next_offset - f->base);
    std::string chunk(static_cast<size_t>(std::min(want, f->size - skip)), '\0');
    const bool seeked = std::fseek(in, static_cast<long>(skip), SEEK_SET) == 0;
    const size_t got = seeked ? std::fread(chunk.data(), 1, chunk.size(), in) : 0;
    std::fclose(in);
    out.data.append(chunk.data(), got);
    out.next_offset += static_cast<int64_t>(got);
    if (got < chunk.size()) break;
  }
  return out;
}

Result<std::string> ReadLogTail(const std::string& path, int64_t max_bytes) {
  const std::vector<std::string> files = LogFiles(path);
  if (files.empty()) return NotFoundError("no log at " + path);
  // Walk newest first, prepending, until max_bytes are collected.
  std::string out;
  for (auto it = files.rbegin(); it != files.rend(); ++it) {
    int fd = ::open(it->c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // rotated away meanwhile
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      ::close(fd);
      continue;
    }
    int64_t want = st.st_size;
    if (max_bytes > 0) want = std::min<int64_t>(want, max_bytes - static_cast<int64_t>(out.size()));
    std::string chunk(static_cast<size_t>(want), '\0');
    ssize_t got = want > 0 ? ::pread(fd, chunk.data(), chunk.size(), st.st_size - want) : 0;
    ::close(fd);
    if (got < 0) return UnavailableError("cannot read " + *it + ": " + ErrnoText(errno));
    chunk.resize(static_cast<size_t>(got));
    out.insert(0, chunk);
    if (max_bytes > 0 && static_cast<int64_t>(out.size()) >= max_bytes) break;
  }
  return out;
}

LogFollower::~LogFollower() {
  if (fd_ >= 0) ::close(fd_);
}

Status LogFollower::Open(bool from_start) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) return NotFoundError("no log at " + path_);
  struct stat st {};
  if (::fstat(fd_, &st) != 0) return UnavailableError("cannot stat " + path_ + ": " + ErrnoText(errno));
  inode_ = st.st_ino;
  offset_ = BaseOf(path_, inode_);
  if (!from_start) {
    const off_t end = ::lseek(fd_, 0, SEEK_END);
    if (end > 0) offset_ += end;
  }
  return Status::Ok();
}

Status LogFollower::OpenTail(int64_t max_bytes) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    ASSIGN_OR_RETURN(std::vector<KeptFile> files, KeptFiles(path_));
    const int64_t end = files.front().base + files.front().size;
    const int64_t target = max_bytes > 0 ? std::max(end - max_bytes, files.back().base) : files.back().base;
    size_t i = 0;
    while (i + 1 < files.size() && files[i].base > target) ++i;
    const int fd = ::open(files[i].name.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd >= 0 && ::fstat(fd, &st) == 0 && st.st_ino == files[i].inode) {
      if (fd_ >= 0) ::close(fd_);
      fd_ = fd;
      inode_ = st.st_ino;
      const int64_t skip = std::max<int64_t>(0, target - files[i].base);
      ::lseek(fd_, static_cast<off_t>(skip), SEEK_SET);
      offset_ = files[i].base + skip;
      return Status::Ok();
    }
    if (fd >= 0) ::close(fd);  // rotated away meanwhile: place it again
  }
  return Open(/*from_start=*/true);
}

namespace {

// Appends the rest of `fd`'s file to `out`.
Status ReadToEnd(int fd, const std::string& name, std::string* out) {
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return UnavailableError("cannot read " + name + ": " + ErrnoText(errno));
    if (n == 0) return Status::Ok();
    out->append(buf, static_cast<size_t>(n));
  }
}

}  // namespace

Result<std::string> LogFollower::ReadNew() {
  auto out = ReadNewUncounted();
  if (out.ok()) offset_ += static_cast<int64_t>(out->size());
  if (skip_to_ >= 0) offset_ = std::exchange(skip_to_, -1);
  return out;
}

Result<std::string> LogFollower::ReadNewUncounted() {
  if (fd_ < 0) return FailedPreconditionError("LogFollower::Open was not called");
  std::string out;
  RETURN_IF_ERROR(ReadToEnd(fd_, path_, &out));
  struct stat live {};
  if (::stat(path_.c_str(), &live) != 0 || live.st_ino == inode_) return out;
  // Rotated, maybe several times: our file is now <path>.k; the files rotated after it are .k-1 ...
  // .1.
  int k = 1;
  struct stat st {};
  while (::stat(RotatedName(path_, k).c_str(), &st) == 0 && st.st_ino != inode_) ++k;
  const bool found = st.st_ino == inode_ && ::stat(RotatedName(path_, k).c_str(), &st) == 0;
  if (!found) {
    // Our file was rotated away (deleted) before the files after it were read: what is not kept is lost. Go on
    // from the oldest kept file at its stream offset; ReadNew moves offset() past the gap.
    if (auto files = KeptFiles(path_); files.ok()) {
      const KeptFile& oldest = files->back();
      const int fd = ::open(oldest.name.c_str(), O_RDONLY | O_CLOEXEC);
      struct stat ost {};
      if (fd >= 0 && ::fstat(fd, &ost) == 0 && ost.st_ino == oldest.inode) {
        ::close(fd_);
        fd_ = fd;
        inode_ = ost.st_ino;
        skip_to_ = oldest.base;
        return out;
      }
      if (fd >= 0) ::close(fd);
    }
  }
  for (int j = found ? k - 1 : 0; j >= 1; --j) {
    int fd = ::open(RotatedName(path_, j).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    Status s = ReadToEnd(fd, RotatedName(path_, j), &out);
    ::close(fd);
    RETURN_IF_ERROR(s);
  }
  int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  ::close(fd_);
  fd_ = fd;
  struct stat now {};
  inode_ = ::fstat(fd_, &now) == 0 ? now.st_ino : live.st_ino;
  RETURN_IF_ERROR(ReadToEnd(fd_, path_, &out));
  return out;
}

}  // namespace xpool::protocol
