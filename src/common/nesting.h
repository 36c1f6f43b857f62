#pragma once
// A bound on how deeply a JSON or YAML text nests, checked on the bytes before any parser builds a tree: a body of
// 400 KB of `[[[[` would otherwise become 400,000 nested nodes (tens of MiB each time, more in yaml-cpp).
//
// CheckNesting counts the brackets `[` and `{` open at once. In JSON it skips strings ("..." with backslash
// escapes: a JSON lexer reads them the same way up to its first error, where the parse stops). In YAML it counts
// every bracket, in strings, comments and block scalars too: where a YAML string or comment starts depends on
// context a byte scan cannot see, and a scanner that skipped too much would let a deep text through. So the count
// may exceed what a parser sees, never fall short of it. YAML block nesting needs more indentation per level, so
// the size limit already bounds it. Stateless; thread-safe.
#include <cstddef>
#include <string_view>

#include "common/status.h"

namespace xpool {

enum class NestingSyntax { kJson, kYaml };

// What the server's parsers allow: every body and spec xpool reads nests a few levels; Kubernetes objects (with
// managedFields) some tens.
inline constexpr int kMaxNestingDepth = 64;

// The deepest bracket nesting of `text` (0 for a scalar).
int NestingDepth(std::string_view text, NestingSyntax syntax);

// InvalidArgument "WHAT nests deeper than MAX levels of [ and {" when NestingDepth(text) > max_depth.
Status CheckNesting(std::string_view text, NestingSyntax syntax, std::string_view what,
                    int max_depth = kMaxNestingDepth);

}  // namespace xpool
