"""Integration tests run twice: on the sim, and on the acl backend over the
stand-in vendor runtime (the daemon and embedded clients load
//client:libstandin_vendor_ascendcl.so through hal/acl)."""

_STANDIN = "//client:libstandin_vendor_ascendcl.so"

def integration_test(name, data = [], tags = [], **attrs):
    native.cc_test(name = name, data = data, tags = tags, **attrs)
    native.cc_test(
        name = name + "_on_acl",
        data = data + [_STANDIN],
        env = {"ACLD_TEST_BACKEND_LIBRARY": "$(rootpath %s)" % _STANDIN},
        tags = tags + ["acl_backend"],
        **attrs
    )
