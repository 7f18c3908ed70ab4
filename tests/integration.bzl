"""Integration tests run twice: on the sim, and on the acl backend over the
stand-in vendor runtime (the daemon and embedded clients load
//client:libstandin_vendor_ascendcl.so through hal/acl)."""

_STANDIN = "//client:libstandin_vendor_ascendcl.so"

def integration_test(name, data = [], tags = [], grpc_smoke = False, **attrs):
    """`grpc_smoke`: also run it with every client on the gRPC fallback
    (ACLD_TRANSPORT=grpc), as `<name>_over_grpc`: the named smoke subset of
    the carrier that the shared-memory channel replaced by default."""
    native.cc_test(name = name, data = data, tags = tags, **attrs)
    if grpc_smoke:
        native.cc_test(
            name = name + "_over_grpc",
            data = data,
            env = {"ACLD_TRANSPORT": "grpc"},
            tags = tags + ["grpc_smoke"],
            **attrs
        )
    native.cc_test(
        name = name + "_on_acl",
        data = data + [_STANDIN],
        env = {"ACLD_TEST_BACKEND_LIBRARY": "$(rootpath %s)" % _STANDIN},
        tags = tags + ["acl_backend"],
        **attrs
    )
