"""Integration tests run twice: on the sim, and on the acl backend over the
stand-in vendor runtime (the daemon and embedded clients load
//client:libstandin_vendor_ascendcl.so through hal/acl)."""

_STANDIN = "//client:libstandin_vendor_ascendcl.so"

def integration_test(name, data = [], tags = [], acl_known_failures = None, **attrs):
    """`acl_known_failures`: why the *_on_acl variant does not pass yet; it is
    then left out of `bazel test //...` (tagged manual) until it does."""
    native.cc_test(name = name, data = data, tags = tags, **attrs)
    acl_tags = tags + ["acl_backend"]
    if acl_known_failures:
        acl_tags = acl_tags + ["manual"]
    native.cc_test(
        name = name + "_on_acl",
        data = data + [_STANDIN],
        env = {"ACLD_TEST_BACKEND_LIBRARY": "$(rootpath %s)" % _STANDIN},
        tags = acl_tags,
        **attrs
    )
