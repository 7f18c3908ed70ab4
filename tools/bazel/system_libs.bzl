"""A repository rule that exposes Debian's system C++ libraries to Bazel.

Each entry of `libraries` maps a target name to a space-separated list of
pkg-config modules. The rule runs pkg-config once per entry and writes a
`cc_library` whose `defines` are the -D flags and whose `linkopts` are the
libraries, so that dependents compile and link exactly as pkg-config says.
Headers live in /usr/include, which the compiler searches already.
"""

def _pkg_config(repository_ctx, flag, modules):
    result = repository_ctx.execute(["pkg-config", flag] + modules.split(" "))
    if result.return_code != 0:
        fail("pkg-config %s %s failed (run tools/setup.sh): %s" % (flag, modules, result.stderr))
    return [word for word in result.stdout.strip().split(" ") if word]

def _dedupe(words):
    seen = {}
    unique = []
    for word in words:
        if word not in seen:
            seen[word] = True
            unique.append(word)
    return unique

def _system_libs_impl(repository_ctx):
    lines = ['package(default_visibility = ["//visibility:public"])', ""]
    for name, modules in repository_ctx.attr.libraries.items():
        cflags = _pkg_config(repository_ctx, "--cflags", modules)
        libs = _pkg_config(repository_ctx, "--libs", modules)
        defines = _dedupe([flag[2:] for flag in cflags if flag.startswith("-D")])
        includes = _dedupe([flag for flag in cflags if flag.startswith("-I")])
        lines.append("cc_library(")
        lines.append('    name = "%s",' % name)
        lines.append("    defines = %s," % repr(defines))
        lines.append("    linkopts = %s," % repr(includes + _dedupe(libs)))
        lines.append(")")
        lines.append("")
    repository_ctx.file("WORKSPACE", 'workspace(name = "%s")\n' % repository_ctx.name)
    repository_ctx.file("BUILD.bazel", "\n".join(lines))

system_libs = repository_rule(
    implementation = _system_libs_impl,
    attrs = {"libraries": attr.string_dict(mandatory = True)},
    local = True,
)
