"""C++ code generation for .proto files with the system protoc.

Debian ships protoc and grpc_cpp_plugin; using them directly keeps the build
offline (Bazel's own proto rules would download protobuf sources).
"""

def cc_proto(name, srcs, deps = [], grpc = False, visibility = None):
    """Generates and compiles C++ for `srcs` (paths relative to this package).

    Args:
      name: the cc_library target.
      srcs: .proto files in this package.
      deps: other cc_proto targets whose .proto files `srcs` import.
      grpc: also generate gRPC service stubs.
      visibility: visibility of the cc_library.
    """
    pkg = native.package_name()
    outs = []
    for src in srcs:
        base = src[:-len(".proto")]
        outs += [base + ".pb.h", base + ".pb.cc"]
        if grpc:
            outs += [base + ".grpc.pb.h", base + ".grpc.pb.cc"]
    proto_deps = [d + "_srcs" for d in deps]
    native.filegroup(
        name = name + "_srcs",
        srcs = srcs + proto_deps,
        visibility = visibility,
    )
    grpc_flags = ""
    if grpc:
        grpc_flags = "--grpc_out=$(GENDIR) --plugin=protoc-gen-grpc=$$(command -v grpc_cpp_plugin) "
    native.genrule(
        name = name + "_gen",
        srcs = srcs + proto_deps,
        outs = outs,
        cmd = "protoc --proto_path=. --cpp_out=$(GENDIR) " + grpc_flags +
              " ".join([pkg + "/" + s for s in srcs]),
    )
    native.cc_library(
        name = name,
        srcs = [o for o in outs if o.endswith(".cc")],
        hdrs = [o for o in outs if o.endswith(".h")],
        deps = deps + ["//third_party:grpc" if grpc else "//third_party:protobuf"],
        visibility = visibility,
    )
