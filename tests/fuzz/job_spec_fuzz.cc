// libFuzzer target for the job-spec parser (YAML through yaml-cpp, JSON objects through nlohmann's SAX parser).
//
// Properties checked on every input, besides "no crash, no sanitizer report, no hang":
//   1. a refused spec is refused with InvalidArgument and a message (never another code, never empty);
//   2. an accepted spec passes ValidateJobSpec and gives a valid TaskRequest;
//   3. the canonical JSON of an accepted spec parses back to the same spec, and is a fixed point;
//   4. when the JSON fast path reads an input, yaml-cpp reads it into the same spec or the same error.
// Built and run by run_job_spec_fuzz.sh (clang++ -fsanitize=fuzzer,address,undefined).
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "model/internal/job_spec_parse.h"
#include "model/job_spec.h"

namespace {

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "job_spec_fuzz: property violated: %s\n%s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  xpool::Result<xpool::JobSpec> spec = xpool::ParseJobSpec(text);
  if (std::optional<xpool::Result<xpool::JobSpec>> fast = xpool::job_spec_parse::ParseAsJson(text)) {
    xpool::Result<xpool::JobSpec> yaml = xpool::job_spec_parse::ParseWithYaml(text);
    const std::string a = fast->ok() ? xpool::JobSpecToJson(**fast) : fast->status().ToString();
    const std::string b = yaml.ok() ? xpool::JobSpecToJson(*yaml) : yaml.status().ToString();
    if (fast->ok() != yaml.ok() || a != b) Fail("the JSON fast path and yaml-cpp disagree", a + "\n" + b);
  }
  if (!spec.ok()) {
    if (spec.status().code() != xpool::StatusCode::kInvalidArgument) Fail("error code", spec.status().ToString());
    if (spec.status().message().empty()) Fail("empty error message", "");
    return 0;
  }
  xpool::Status valid = xpool::ValidateJobSpec(*spec);
  if (!valid.ok()) Fail("accepted spec fails ValidateJobSpec", valid.ToString());
  xpool::Status request = xpool::ValidateTaskRequest(spec->ToTaskRequest());
  if (!request.ok()) Fail("accepted spec gives an invalid TaskRequest", request.ToString());
  const std::string json = xpool::JobSpecToJson(*spec);
  xpool::Result<xpool::JobSpec> again = xpool::ParseJobSpec(json);
  if (!again.ok()) Fail("canonical JSON does not parse", again.status().ToString() + "\n" + json);
  if (!(*again == *spec)) Fail("canonical JSON parses to another spec", json);
  if (xpool::JobSpecToJson(*again) != json) Fail("canonical JSON is not a fixed point", json);
  return 0;
}
