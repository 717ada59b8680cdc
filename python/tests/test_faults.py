"""Fault rules from Python: given to the tpu_worker fixture as a parameter,
and added, listed and cleared through softtpu.control."""

import numpy as np
import pytest

import softtpu

RULE = "alloc nth=2 fail=RESOURCE_EXHAUSTED:no room for the second buffer"


@pytest.mark.parametrize("tpu_worker", [{"chips": 1, "fault": [RULE]}],
                         indirect=True, ids=["grpc"])
def test_fault_rules_from_the_fixture_and_at_run_time(tpu_worker):
    client = softtpu.TpuClient.Get(tpu_worker)
    device = client.local_devices()[0]
    value = np.arange(4, dtype=np.float32)
    first = client.buffer_from_pyval(value, device)
    with pytest.raises(softtpu.TpuError) as error:
        client.buffer_from_pyval(value, device).block_host_until_ready()
    assert error.value.code == "RESOURCE_EXHAUSTED"
    assert "no room for the second buffer" in error.value.message

    ctl = softtpu.control(tpu_worker)
    assert ctl.faults() == [{"number": 1, "text": RULE, "matched": 1}]
    assert ctl.add_fault("transfer_from fail=DATA_LOSS:bit flip") == 2
    with pytest.raises(softtpu.TpuError) as error:
        first.to_py()
    assert error.value.code == "DATA_LOSS"
    assert "bit flip" in error.value.message
    assert ctl.clear_faults() == 2
    assert ctl.faults() == []
    np.testing.assert_array_equal(
        client.buffer_from_pyval(value, device).to_py(), value)

    with pytest.raises(softtpu.TpuError) as error:
        ctl.add_fault("execute core=1 explode")
    assert error.value.code == "INVALID_ARGUMENT"
    assert "column" in error.value.message
