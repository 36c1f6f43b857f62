#pragma once
// The two readers behind ParseJobSpec (job_spec_parse.cc), exposed for the tests that check they agree
// (job_spec_test.cc, tests/fuzz). Private to src/model. Stateless; thread-safe.
#include <optional>
#include <string_view>

#include "common/status.h"
#include "model/job_spec.h"

namespace xpool::job_spec_parse {

// yaml-cpp: any YAML or JSON text.
Result<JobSpec> ParseWithYaml(std::string_view text);
// The fast path for a JSON object (nlohmann's SAX parser, no yaml-cpp): the same spec or the same error as
// ParseWithYaml, or nullopt when the text is not a JSON object it reads exactly as yaml-cpp would (not JSON, a
// YAML flow mapping, nesting deeper than 16, a key over 160 bytes, "-0", a \uD8xx escape, a number beyond a
// double, a NUL byte, a CR without LF, a line break before a key's ':'): the caller then uses
// ParseWithYaml.
std::optional<Result<JobSpec>> ParseAsJson(std::string_view text);

}  // namespace xpool::job_spec_parse
