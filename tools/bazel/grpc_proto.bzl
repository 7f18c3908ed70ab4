"""cc_grpc_proto: C++ protobuf + gRPC code from one .proto with the system protoc.

Bazel's proto_library needs the protobuf source repository, which is not
available offline; a genrule running Debian's protoc and grpc_cpp_plugin does
the same job. Imports are resolved from the workspace root, so a file at
proto/acl/v1/runtime.proto is imported as "proto/acl/v1/runtime.proto".
"""

def cc_grpc_proto(name, src, deps = [], grpc = True, visibility = None):
    """Generates <name>, a cc_library with the messages (and services) of `src`."""
    base = src[:-len(".proto")]
    outs = [base + ".pb.h", base + ".pb.cc"]
    if grpc:
        outs += [base + ".grpc.pb.h", base + ".grpc.pb.cc"]
    package = native.package_name()
    gen_dir = "$(GENDIR)" + ("/" + package if package else "")
    grpc_flags = ""
    if grpc:
        grpc_flags = "--grpc_out=$(GENDIR) --plugin=protoc-gen-grpc=$$(command -v grpc_cpp_plugin) "
    native.genrule(
        name = name + "_gen",
        srcs = [src] + [d + "_srcs" for d in deps],
        outs = outs,
        cmd = "protoc --proto_path=. --cpp_out=$(GENDIR) " + grpc_flags +
              (package + "/" if package else "") + src,
    )
    native.filegroup(name = name + "_srcs", srcs = [src] + [d + "_srcs" for d in deps], visibility = visibility)
    native.cc_library(
        name = name,
        srcs = [o for o in outs if o.endswith(".cc")],
        hdrs = [o for o in outs if o.endswith(".h")],
        deps = deps + ["@system//:protobuf"] + (["@system//:grpcpp"] if grpc else []),
        visibility = visibility,
    )
