"""The worker's control service, from Python: what the emulated TPU is doing.

    import softtpu
    ctl = softtpu.control("grpc://127.0.0.1:8470")
    print(ctl.wait_report_text())      # who waits in which collective, for whom
    report = ctl.wait_report()         # the same as a dict
    if report["cycles"]: ...
    ctl.add_fault("execute core=1 nth=1 delay=200ms")   # fault rules
    ctl.faults(); ctl.clear_faults()

A real TPU has no such service; these calls answer only from tpu_emulator
(grpc:// targets, or HOST:PORT). Every RPC of proto/control.proto is reachable
through Control.call with the request and response as dicts, field names as
in the proto.
"""

import json

from softtpu import _softtpu


class Control:
    """A connection to the control service of the worker at `target`."""

    def __init__(self, target, timeout=10.0):
        self.target = target
        self.timeout = float(timeout)

    def call(self, method, request=None):
        """Calls tpu_emulator.Control/<method>; returns the response dict."""
        response = _softtpu._control_call(self.target, method,
                                          json.dumps(request or {}),
                                          self.timeout)
        return json.loads(response)

    def wait_report(self, history=0):
        """Per core: what it runs or which collective it waits in, for which
        cores, what those do instead (`diagnosis`), and the wait-for
        `cycles`. `history` adds each core's last N collectives."""
        return self.call("GetWaitReport", {"history": int(history)})

    def wait_report_text(self, history=0):
        """The wait report as `tpu_ctl waits` prints it."""
        response = _softtpu._control_call(self.target, "GetWaitReport",
                                          json.dumps({"history": int(history)}),
                                          self.timeout)
        return _softtpu._format_wait_report(response)

    def add_fault(self, rule):
        """Adds a fault rule (the README's grammar, e.g. "execute core=1 nth=1
        delay=200ms") for operations that start from now on; returns its
        number. A rule that does not parse raises TpuError INVALID_ARGUMENT
        naming the column and what was expected."""
        return int(self.call("AddFault", {"rule": rule})["number"])

    def faults(self):
        """The worker's fault rules: [{"number", "text", "matched"}]."""
        return [{"number": int(r["number"]), "text": r["text"],
                 "matched": int(r["matched"])}
                for r in self.call("ListFaults").get("rules", [])]

    def clear_faults(self):
        """Removes every rule (and gives the cores their whole HBM back);
        returns how many there were."""
        return int(self.call("ClearFaults").get("cleared", 0))

    def stats(self):
        """Per core and per client usage and activity now (tpu_ctl stats)."""
        return self.call("GetStats")

    def __repr__(self):
        return f"softtpu.Control({self.target!r})"


def control(target, timeout=10.0):
    """A Control for the worker at `target` (grpc://HOST:PORT or HOST:PORT);
    each call waits at most `timeout` seconds for the worker's answer."""
    return Control(target, timeout)
