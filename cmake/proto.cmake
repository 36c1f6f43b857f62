# gRPC C++ code generated from .proto files (Debian: protobuf-compiler, protobuf-compiler-grpc, libprotobuf-dev,
# libgrpc++-dev; found with pkg-config, not gRPC's CMake config).
#
#   xpool_grpc_library(NAME name PROTO proto/dir/file.proto)
#       -> static library `xpool_<name>` holding the generated messages and services of that one file. Its
#          headers are included as "<dir>/<file>.grpc.pb.h" (path relative to proto/). Generated code is built
#          without -Werror; only the .cc files that talk gRPC should include the generated headers.

find_program(XPOOL_PROTOC protoc)
find_program(XPOOL_GRPC_CPP_PLUGIN grpc_cpp_plugin)
find_package(PkgConfig REQUIRED)
pkg_check_modules(XPOOL_GRPCPP IMPORTED_TARGET grpc++ protobuf)

function(xpool_grpc_library)
  cmake_parse_arguments(ARG "" "NAME;PROTO" "" ${ARGN})
  if(NOT XPOOL_PROTOC OR NOT XPOOL_GRPC_CPP_PLUGIN OR NOT XPOOL_GRPCPP_FOUND)
    message(FATAL_ERROR "xpool_grpc_library(${ARG_NAME}): protoc, grpc_cpp_plugin and grpc++ are required "
                        "(apt-get install protobuf-compiler protobuf-compiler-grpc libprotobuf-dev libgrpc++-dev)")
  endif()
  set(proto_root ${CMAKE_SOURCE_DIR}/proto)
  set(out_dir ${CMAKE_BINARY_DIR}/proto_gen)
  file(RELATIVE_PATH rel ${proto_root} ${CMAKE_SOURCE_DIR}/${ARG_PROTO})
  string(REGEX REPLACE "\\.proto$" "" stem ${rel})
  set(generated ${out_dir}/${stem}.pb.cc ${out_dir}/${stem}.pb.h ${out_dir}/${stem}.grpc.pb.cc
                ${out_dir}/${stem}.grpc.pb.h)
  add_custom_command(OUTPUT ${generated}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${out_dir}
    COMMAND ${XPOOL_PROTOC} --proto_path=${proto_root} --cpp_out=${out_dir} --grpc_out=${out_dir}
            --plugin=protoc-gen-grpc=${XPOOL_GRPC_CPP_PLUGIN} ${proto_root}/${rel}
    DEPENDS ${proto_root}/${rel}
    COMMENT "Generating gRPC C++ code from ${rel}")
  add_library(xpool_${ARG_NAME} STATIC ${out_dir}/${stem}.pb.cc ${out_dir}/${stem}.grpc.pb.cc)
  target_include_directories(xpool_${ARG_NAME} SYSTEM PUBLIC ${out_dir})
  target_compile_options(xpool_${ARG_NAME} PRIVATE -Wno-error -w)
  target_link_libraries(xpool_${ARG_NAME} PUBLIC PkgConfig::XPOOL_GRPCPP)
endfunction()
