#include "common/nesting.h"

#include <string>

namespace xpool {

int NestingDepth(std::string_view text, NestingSyntax syntax) {
  int depth = 0, deepest = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"' && syntax == NestingSyntax::kJson) {  // a string, with backslash escapes
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\') ++i;
      }
    } else if (c == '[' || c == '{') {
      if (++depth > deepest) deepest = depth;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

Status CheckNesting(std::string_view text, NestingSyntax syntax, std::string_view what, int max_depth) {
  if (NestingDepth(text, syntax) <= max_depth) return Status::Ok();
  return InvalidArgumentError(std::string(what) + " nests deeper than " + std::to_string(max_depth) +
                              " levels of [ and {");
}

}  // namespace xpool
