#pragma once
// Where in a job spec's text a problem lies, for editors that mark it (Studio's submit page, through
// POST /api/v1/jobs:validate). The verdict is ParseJobSpec's own; these functions only add the position.
// Stateless functions; thread-safe.
#include <string_view>

#include "common/status.h"
#include "model/job_spec.h"

namespace xpool {

// A place in a text: 1-based line and column (columns count bytes); 0 and 0 when there is none.
struct TextPosition {
  int line = 0;
  int column = 0;
  friend bool operator==(const TextPosition&, const TextPosition&) = default;
};

// Parses `text` exactly as ParseJobSpec does (the same spec, or the same error) and, on an error, sets *where to
// where it lies: a YAML syntax error's own position; the value of the field the error names (its key for an
// unknown or duplicate field, or when the value is a list or a mapping); line 1, column 1 when the error is
// about the spec as a whole (a required field missing, the text too large). `where` is left alone on success.
Result<JobSpec> ParseJobSpecAt(std::string_view text, TextPosition* where);

// Where the field at `path` ("tenant", "resources.gpumem") is written in `text`: its key's position. {0, 0}
// when the text does not parse or has no such field.
TextPosition LocateJobSpecField(std::string_view text, std::string_view path);

}  // namespace xpool
