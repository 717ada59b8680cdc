"""python3 -m softtpu.run [flags]: the bundled tpu_run.

Runs an HLO module with .npy inputs and outputs, exactly as tpu_run does:
  python3 -m softtpu.run --target=grpc://127.0.0.1:8470 --module=model.hlo \\
      --inputs_dir=in --outputs_dir=out
See `python3 -m softtpu.run --help` for every flag.
"""

from softtpu import _binaries

if __name__ == "__main__":
    _binaries.exec_main("tpu_run")
