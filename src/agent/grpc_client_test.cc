// The agent's gRPC client: the transport chosen from --server, and what an unreachable server looks like.
#include "agent/grpc_client.h"

#include <gtest/gtest.h>

#include "model/node_builder.h"

namespace xpool::agent {
namespace {

TEST(GrpcClientTest, ServerUrlPicksTheTransport) {
  for (const char* ok :
       {"grpc://127.0.0.1:8471", "127.0.0.1:8471", "localhost:1", "http://127.0.0.1:8470", "grpc://[::1]:8471/"}) {
    EXPECT_TRUE(MakeControlPlaneClient(ok, "t", kMicrosPerSecond).ok()) << ok;
  }
  for (const char* bad : {"ftp://h:1", "grpc://h", "h:", "h:0", "h:99999", "http://h:x", ""}) {
    auto c = MakeControlPlaneClient(bad, "t", kMicrosPerSecond);
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(GrpcClientTest, UnreachableServerIsUnavailableNamingTheAddress) {
  // Port 1 on loopback: nothing listens there (connection refused at once).
  GrpcControlPlaneClient client({"127.0.0.1:1", "t", 2 * kMicrosPerSecond});
  Status s = client.Register(MakeNode("n1").Build());
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("grpc://127.0.0.1:1"), std::string::npos) << s.message();
  EXPECT_FALSE(client.Connected());
}

}  // namespace
}  // namespace xpool::agent
