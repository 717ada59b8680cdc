"""record:// from Python: a client whose driver records its session."""

import struct

import numpy as np

import programs
import softtpu


def _records(path):
    """The payload sizes of a log's records (uint64 length framing)."""
    data = open(path, "rb").read()
    sizes, offset = [], 0
    while offset < len(data):
        (size,) = struct.unpack_from("=Q", data, offset)
        offset += 8 + size
        sizes.append(size)
    assert offset == len(data)
    return sizes


def test_record_scheme_records_the_session(tmp_path):
    log = tmp_path / "session.log"
    client = softtpu.TpuBackend.create(
        worker=f"record://|file={log}|worker=local://?chips=1")
    # A record:// client of its own, never cached as the local backend.
    assert client is not softtpu.TpuBackend._local_backend
    executable = client.compile(programs.ADD_ONE)
    (out,) = executable.execute([client.buffer_from_pyval(np.float32(41))])
    assert out.to_py() == np.float32(42)
    del out, executable, client
    # compile, alloc, transfer_to, load, alloc, execute, transfer_from, ...
    assert len(_records(log)) >= 7
    assert len(_records(str(log) + ".results")) >= 7
