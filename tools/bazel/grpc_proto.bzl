"""cc_grpc_proto: C++ protobuf + gRPC code from one .proto with the system protoc.

Bazel's proto_library needs the protobuf source repository, which is not
available offline; a genrule running Debian's protoc and grpc_cpp_plugin does
the same job. Imports are resolved from the workspace root, so a file at
proto/acl/v1/runtime.proto is imported as "proto/acl/v1/runtime.proto".
"""

def cc_grpc_proto(name, src, deps = [], grpc = True, visibility = None):
    """Generates <name>, a cc_library with the messages (and services) of `src`.

    <name>_messages holds the messages alone, without gRPC: code that only
    encodes and decodes them (a codec another carrier reuses) depends on it.
    """
    base = src[:-len(".proto")]
    message_outs = [base + ".pb.h", base + ".pb.cc"]
    grpc_outs = [base + ".grpc.pb.h", base + ".grpc.pb.cc"] if grpc else []
    package = native.package_name()
    grpc_flags = ""
    if grpc:
        grpc_flags = "--grpc_out=$(GENDIR) --plugin=protoc-gen-grpc=$$(command -v grpc_cpp_plugin) "
    native.genrule(
        name = name + "_gen",
        srcs = [src] + [d + "_srcs" for d in deps],
        outs = message_outs + grpc_outs,
        cmd = "protoc --proto_path=. --cpp_out=$(GENDIR) " + grpc_flags +
              (package + "/" if package else "") + src,
    )
    native.filegroup(name = name + "_srcs", srcs = [src] + [d + "_srcs" for d in deps], visibility = visibility)
    native.cc_library(
        name = name + "_messages",
        srcs = [o for o in message_outs if o.endswith(".cc")],
        hdrs = [o for o in message_outs if o.endswith(".h")],
        deps = [d + "_messages" for d in deps] + ["@system//:protobuf"],
        visibility = visibility,
    )
    native.cc_library(
        name = name,
        srcs = [o for o in grpc_outs if o.endswith(".cc")],
        hdrs = [o for o in grpc_outs if o.endswith(".h")],
        deps = [name + "_messages"] + deps + (["@system//:grpcpp"] if grpc else []),
        visibility = visibility,
    )
