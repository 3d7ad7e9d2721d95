# mkube_proto_library(NAME PROTOS a.proto b.proto [GRPC])
# Generates C++ (and gRPC stubs with GRPC) for protos under proto/, into the build tree,
# preserving their path relative to the source root so includes read "proto/etcd/rpc.pb.h".
function(mkube_proto_library name)
  cmake_parse_arguments(ARG "GRPC" "" "PROTOS;DEPS" ${ARGN})
  set(out_dir ${PROJECT_BINARY_DIR}/gen)
  set(srcs)
  foreach(proto ${ARG_PROTOS})
    get_filename_component(abs ${proto} ABSOLUTE)
    file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${abs})
    string(REGEX REPLACE "\\.proto$" "" base ${rel})
    set(outputs ${out_dir}/${base}.pb.cc ${out_dir}/${base}.pb.h)
    set(args --cpp_out=${out_dir})
    if(ARG_GRPC)
      list(APPEND outputs ${out_dir}/${base}.grpc.pb.cc ${out_dir}/${base}.grpc.pb.h)
      list(APPEND args --grpc_out=${out_dir} --plugin=protoc-gen-grpc=${GRPC_CPP_PLUGIN})
    endif()
    add_custom_command(
      OUTPUT ${outputs}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${out_dir}
      COMMAND protobuf::protoc ARGS -I ${PROJECT_SOURCE_DIR} ${args} ${rel}
      DEPENDS ${abs} protobuf::protoc
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
      COMMENT "protoc ${rel}")
    list(APPEND srcs ${outputs})
  endforeach()
  add_library(${name} STATIC ${srcs})
  target_include_directories(${name} PUBLIC ${out_dir})
  target_link_libraries(${name} PUBLIC protobuf::libprotobuf ${ARG_DEPS})
  if(ARG_GRPC)
    target_link_libraries(${name} PUBLIC gRPC::grpc++)
  endif()
endfunction()
