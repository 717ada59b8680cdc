"""The worker's control service (wait reports): not wired in yet.

A worker will report what each pending operation waits for through a control
service that is being built separately. These entry points fix the Python
names now; until the service lands, each raises TpuError UNIMPLEMENTED.
"""

from softtpu.errors import TpuError

_NOT_YET = ("softtpu.control is not connected to the worker's control "
            "service yet; {what} is unavailable")


def connect(target):
    """A control connection to the worker at `target` (grpc://host:port)."""
    raise TpuError("UNIMPLEMENTED",
                   _NOT_YET.format(what=f"connect({target!r})"))


def wait_report(target):
    """What each pending operation on the worker at `target` waits for."""
    raise TpuError("UNIMPLEMENTED",
                   _NOT_YET.format(what=f"wait_report({target!r})"))
