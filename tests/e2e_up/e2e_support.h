#pragma once
// The e2e helpers now live in tests/support/xpool_process.h (namespace xpool::testing, library
// xpool_test_support). This header keeps the old names for bench/agent_protocol_bench.cc, its last user (every
// e2e test includes tests/support directly); new code includes "support/xpool_process.h". Test-only.
#include "support/xpool_process.h"

namespace xpool::e2e {

using Child = testing::XpoolProcess;
using testing::FreePort;
using testing::ProcessAlive;
using testing::ReadFile;
using testing::RunCli;
using testing::XpoolBinary;

}  // namespace xpool::e2e
