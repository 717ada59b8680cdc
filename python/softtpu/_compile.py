"""TpuClient.compile: reads a computation and options in the forms XLA's
Python client accepts and hands plain values to the extension's _compile."""


class CompileOptions:
    """How compile() places a program.

    Attributes:
      num_replicas: replicas of the program, each on its own device (>= 1).
      num_partitions: computations per replica; only 1 is supported.
      device_assignment: None for the default (replica i on local device i),
        else one device (a TpuDevice or its id) per replica, or a
        [replica][partition] list of lists of them.
      tuple_arguments: execute() packs the arguments into one tuple, for an
        entry computation with a single tuple parameter. Also reachable as
        parameter_is_tupled_arguments, XLA's name.

    executable_build_options is the object itself, so code written for
    xla_client.CompileOptions (options.executable_build_options.num_replicas
    = 2) works unchanged.
    """

    def __init__(self, num_replicas=1, num_partitions=1,
                 device_assignment=None, tuple_arguments=False):
        self.num_replicas = num_replicas
        self.num_partitions = num_partitions
        self.device_assignment = device_assignment
        self.tuple_arguments = tuple_arguments

    @property
    def executable_build_options(self):
        return self

    @property
    def parameter_is_tupled_arguments(self):
        return self.tuple_arguments

    @parameter_is_tupled_arguments.setter
    def parameter_is_tupled_arguments(self, value):
        self.tuple_arguments = value


def _module_bytes(computation):
    """HLO text or a serialized HloProto/HloModuleProto, as bytes."""
    if isinstance(computation, str):
        return computation.encode("utf-8")
    if isinstance(computation, (bytes, bytearray, memoryview)):
        return bytes(computation)
    # An XlaComputation from XLA's Python client.
    if hasattr(computation, "as_serialized_hlo_module_proto"):
        return computation.as_serialized_hlo_module_proto()
    if hasattr(computation, "as_hlo_text"):
        return computation.as_hlo_text().encode("utf-8")
    raise TypeError(
        "compile() takes HLO text (str), a serialized HloProto or "
        f"HloModuleProto (bytes), or an XlaComputation; got "
        f"{type(computation).__name__}")


def _device_id(device):
    return device if isinstance(device, int) else device.id


def _assignment_ids(assignment):
    """[replica][partition] device ids, or None."""
    if assignment is None:
        return None
    rows = []
    for entry in assignment:
        if isinstance(entry, (list, tuple)):
            rows.append([_device_id(d) for d in entry])
        else:
            rows.append([_device_id(entry)])
    return rows


def compile(client, computation, compile_options=None, *, num_replicas=None):
    """Compiles `computation` and loads it on the devices of its replicas.

    computation: HLO text, a serialized HloProto or HloModuleProto, or an
      XlaComputation. compile_options: a CompileOptions (or anything with the
      same attributes, directly or under executable_build_options).
      num_replicas, when given, overrides the options' replica count.
    Raises TpuError: INVALID_ARGUMENT for a module that does not parse or
      options that do not fit the system; the compiler's error otherwise.
    """
    build = getattr(compile_options, "executable_build_options",
                    compile_options)
    if num_replicas is None:
        num_replicas = getattr(build, "num_replicas", 1)
    return client._compile(
        _module_bytes(computation), num_replicas,
        getattr(build, "num_partitions", 1),
        _assignment_ids(getattr(build, "device_assignment", None)),
        bool(getattr(compile_options, "parameter_is_tupled_arguments",
                     getattr(compile_options, "tuple_arguments", False))))
