#pragma once
// ToGrpc: a Status as a grpc::Status (same message; codes mapped one to one). Header-only and including gRPC, so
// only .cc files that talk gRPC (and link it) include it: server/agent_grpc_service.cc, k8s/device_plugin.cc.
// Stateless; thread-safe.
#include <grpcpp/support/status.h>

#include "common/status.h"

namespace xpool {

inline grpc::Status ToGrpc(const Status& s) {
  switch (s.code()) {
    case StatusCode::kOk:
      return grpc::Status::OK;
    case StatusCode::kInvalidArgument:
      return {grpc::StatusCode::INVALID_ARGUMENT, s.message()};
    case StatusCode::kNotFound:
      return {grpc::StatusCode::NOT_FOUND, s.message()};
    case StatusCode::kAlreadyExists:
      return {grpc::StatusCode::ALREADY_EXISTS, s.message()};
    case StatusCode::kFailedPrecondition:
      return {grpc::StatusCode::FAILED_PRECONDITION, s.message()};
    case StatusCode::kResourceExhausted:
      return {grpc::StatusCode::RESOURCE_EXHAUSTED, s.message()};
    case StatusCode::kPermissionDenied:
      return {grpc::StatusCode::PERMISSION_DENIED, s.message()};
    case StatusCode::kUnauthenticated:
      return {grpc::StatusCode::UNAUTHENTICATED, s.message()};
    case StatusCode::kUnavailable:
      return {grpc::StatusCode::UNAVAILABLE, s.message()};
    case StatusCode::kAborted:
      return {grpc::StatusCode::ABORTED, s.message()};
    case StatusCode::kInternal:
      return {grpc::StatusCode::INTERNAL, s.message()};
  }
  return {grpc::StatusCode::INTERNAL, s.message()};
}

}  // namespace xpool
