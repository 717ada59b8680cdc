"""A local repository exposing the system Python's C headers and facts.

The extension module is built against Debian's python3 (the interpreter that
finds Debian's numpy and pytest), so the rule asks that interpreter where its
headers are instead of downloading anything. A `python3` earlier on PATH (a
pyenv shim, say) is deliberately not used.

The repository provides:
  :python_headers  a cc_library with Python.h on the include path;
  defs.bzl         PYTHON_TAG ("cp311"), EXTENSION_SUFFIX
                   (".cpython-311-x86_64-linux-gnu.so"), PLATFORM_TAG
                   ("linux_x86_64") and INTERPRETER, for naming the module and
                   the wheel.
"""

_QUERY = """
import sys, sysconfig
print(sysconfig.get_paths()["include"])
print("cp%d%d" % sys.version_info[:2])
print(sysconfig.get_config_var("EXT_SUFFIX"))
print(sysconfig.get_platform().replace("-", "_").replace(".", "_"))
"""

def _python_configure_impl(ctx):
    interpreter = ctx.attr.interpreter
    result = ctx.execute([interpreter, "-c", _QUERY])
    if result.return_code != 0:
        fail("cannot run %s to locate the Python headers (install python3-dev): %s" %
             (interpreter, result.stderr))
    include, tag, suffix, platform = result.stdout.strip().split("\n")
    if not ctx.path(include + "/Python.h").exists:
        fail("%s/Python.h is missing; install python3-dev" % include)
    ctx.symlink(include, "include")
    ctx.file("BUILD.bazel", """\
package(default_visibility = ["//visibility:public"])

cc_library(
    name = "python_headers",
    hdrs = glob(["include/**/*.h"]),
    includes = ["include"],
)
""")
    ctx.file("defs.bzl", """\
INTERPRETER = "{interpreter}"
PYTHON_TAG = "{tag}"
EXTENSION_SUFFIX = "{suffix}"
PLATFORM_TAG = "{platform}"
""".format(interpreter = interpreter, tag = tag, suffix = suffix, platform = platform))

python_configure = repository_rule(
    implementation = _python_configure_impl,
    attrs = {"interpreter": attr.string(default = "/usr/bin/python3")},
    local = True,
)
