#include "scheduler/queue/text_arena.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

namespace xpool {
namespace {

// A text of `size` bytes that differs from its neighbours (so an overwrite shows).
std::string Text(size_t size, int seed) {
  std::string s(size, ' ');
  for (size_t i = 0; i < size; ++i) s[i] = static_cast<char>('a' + (seed * 7 + i) % 26);
  return s;
}

TEST(TextArenaTest, ViewsKeepTheirTextsAcrossChunksAndMoves) {
  std::mt19937 rng(7);
  TextArena arena;
  std::vector<std::string> expected;
  std::vector<std::string_view> views;
  for (int i = 0; i < 5000; ++i) {
    // Mostly short texts, some longer than a quarter chunk (their own chunks), some split in two
    // parts.
    const size_t size = i % 97 == 0 ? TextArena::kChunkBytes / 4 + 1 + rng() % 100000 : rng() % 300;
    const std::string text = Text(size, i);
    const size_t cut = i % 3 == 0 ? size / 2 : size;
    views.push_back(arena.Add(std::string_view(text).substr(0, cut), std::string_view(text).substr(cut)));
    expected.push_back(text);
  }
  EXPECT_GT(arena.chunk_count(), 10u);
  TextArena moved = std::move(arena);
  EXPECT_EQ(arena.chunk_count(), 0u);
  // The moved-from arena starts afresh: its texts must not land in the chunks the other one owns
  // now.
  for (int i = 0; i < 2000; ++i) {
    const std::string text = Text(200, -i);
    std::string_view v = arena.Add(text);
    EXPECT_EQ(v, text);
  }
  TextArena assigned;
  assigned.Add("something");
  assigned = std::move(moved);
  for (size_t i = 0; i < views.size(); ++i) {
    SCOPED_TRACE(i);
    ASSERT_EQ(views[i], expected[i]);
  }
}

TEST(TextArenaTest, EmptyTextsTakeNoStorage) {
  TextArena arena;
  EXPECT_TRUE(arena.Add("").empty());
  EXPECT_TRUE(arena.Add("", "").empty());
  EXPECT_EQ(arena.chunk_count(), 0u);
  EXPECT_EQ(arena.Add("", "tail"), "tail");
  EXPECT_EQ(arena.Add("head", ""), "head");
  EXPECT_EQ(arena.Add("head", "; tail"), "head; tail");
  EXPECT_EQ(arena.chunk_count(), 1u);
}

}  // namespace
}  // namespace xpool
