#pragma once
// TextArena: append-only storage for texts that many records refer to by std::string_view — a
// scheduling pass's decision reasons, where ~100,000 waiting jobs share a few thousand distinct
// texts: one copy per text instead of one heap string per job (each a malloc, a copy and, when the
// result is dropped, a free).
//
// Texts are copied into chunks of kChunkBytes (a longer text gets a chunk of its own); a view Add
// returns stays valid, unchanged, for the arena's life, also after the arena is moved (the chunks
// are not). Not copyable, so the owner of the arena (PassResult) cannot be copied into one whose
// views point into the other. Not thread-safe.
#include <cstddef>
#include <cstring>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

namespace xpool {

class TextArena {
 public:
  static constexpr size_t kChunkBytes = 64 * 1024;

  TextArena() = default;
  TextArena(const TextArena&) = delete;
  TextArena& operator=(const TextArena&) = delete;
  // Moving hands the chunks over; the moved-from arena is empty (its next Add starts a chunk of its
  // own).
  TextArena(TextArena&& o) noexcept
      : chunks_(std::move(o.chunks_)), next_(std::exchange(o.next_, nullptr)), left_(std::exchange(o.left_, 0)) {
    o.chunks_.clear();
  }
  TextArena& operator=(TextArena&& o) noexcept {
    if (this != &o) {
      chunks_ = std::move(o.chunks_);
      o.chunks_.clear();
      next_ = std::exchange(o.next_, nullptr);
      left_ = std::exchange(o.left_, 0);
    }
    return *this;
  }

  // A copy of `a` followed by `b`. An empty text takes no storage (an empty view).
  std::string_view Add(std::string_view a, std::string_view b = {}) {
    const size_t size = a.size() + b.size();
    if (size == 0) return {};
    char* out = Reserve(size);
    if (!a.empty()) std::memcpy(out, a.data(), a.size());
    if (!b.empty()) std::memcpy(out + a.size(), b.data(), b.size());
    return {out, size};
  }

  // Chunks held (for tests and memory accounting).
  size_t chunk_count() const { return chunks_.size(); }

 private:
  char* Reserve(size_t size) {
    if (size > left_) {
      if (size > kChunkBytes / 4) {  // a long text: its own chunk, the current one stays open
        chunks_.push_back(std::make_unique_for_overwrite<char[]>(size));
        return chunks_.back().get();
      }
      chunks_.push_back(std::make_unique_for_overwrite<char[]>(kChunkBytes));
      next_ = chunks_.back().get();
      left_ = kChunkBytes;
    }
    char* out = next_;
    next_ += size;
    left_ -= size;
    return out;
  }

  std::vector<std::unique_ptr<char[]>> chunks_;
  char* next_ = nullptr;  // free space of the last full-size chunk
  size_t left_ = 0;
};

}  // namespace xpool
