"""The programs shipped inside the package (softtpu/bin/)."""

import os
import sys

from softtpu.errors import TpuError


def path(name):
    """Absolute path of the bundled program `name` ("tpu_emulator")."""
    binary = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin",
                          name)
    if not os.access(binary, os.X_OK):
        raise TpuError("NOT_FOUND",
                       f"{binary} is missing or not executable; reinstall "
                       f"softtpu (the wheel bundles {name})")
    return binary


def exec_main(name, argv=None):
    """Replaces this process with the bundled `name`, passing `argv` (default:
    this process's arguments), so signals and the exit status are the
    program's own."""
    binary = path(name)
    args = sys.argv[1:] if argv is None else list(argv)
    os.execv(binary, [binary] + args)
