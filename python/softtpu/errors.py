"""TpuError: how every failure of the TPU system reaches Python.

The extension module converts each failed absl::Status into a TpuError (in
one place, python/extension/status.cc); this module stays free of other
imports so the extension can import it while the package initializes.
"""


class TpuError(RuntimeError):
    """A failed TPU operation.

    Attributes:
      code: the canonical status code name, e.g. "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED", "UNAVAILABLE" (the names absl and gRPC use).
      message: the status message, without the code.

    str(error) is "CODE: message", as XLA's Python client prints a status.
    """

    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message

    def __reduce__(self):
        # RuntimeError would pickle only args, losing the code.
        return (type(self), (self.code, self.message))
