"""Writes the softtpu wheel from the staged package files.

A wheel is a zip archive with a .dist-info directory (PEP 427), so the
standard zipfile module builds it: no setuptools, no network.

  build_wheel.py --out=W.whl --version=V --tag=cp311-cp311-linux_x86_64 \\
      --root=python/pkg FILE...

Each FILE goes into the wheel at the path that follows "<root>/" in it;
executable files stay executable once pip installs them.
"""

import argparse
import base64
import hashlib
import os
import stat
import sys
import zipfile

# Reproducible archives: every entry gets the same timestamp.
_TIMESTAMP = (1980, 1, 1, 0, 0, 0)

_METADATA = """\
Metadata-Version: 2.1
Name: softtpu
Version: {version}
Summary: Python client for the software TPU (and Cloud TPU workers), over numpy
Requires-Python: >=3.11
Requires-Dist: numpy

Mirrors TensorFlow's TPU driver Python client. Bundles the tpu_emulator and
tpu_run programs: python3 -m softtpu.emulator, python3 -m softtpu.run.
"""

_WHEEL = """\
Wheel-Version: 1.0
Generator: softtpu build_wheel.py
Root-Is-Purelib: false
Tag: {tag}
"""

# Named after the module, so a conftest that lists the same module in
# pytest_plugins does not register it a second time.
_ENTRY_POINTS = """\
[pytest11]
softtpu.pytest_plugin = softtpu.pytest_plugin
"""


def _record_line(name, data):
    digest = hashlib.sha256(data).digest()
    encoded = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    return f"{name},sha256={encoded},{len(data)}"


def _add(archive, name, data, executable):
    info = zipfile.ZipInfo(name, date_time=_TIMESTAMP)
    mode = 0o755 if executable else 0o644
    info.external_attr = (stat.S_IFREG | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, data)


def _archive_name(path, root):
    marker = root.rstrip("/") + "/"
    index = path.find(marker)
    if index < 0:
        sys.exit(f"build_wheel: {path} is not under {root}")
    return path[index + len(marker):]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True)
    parser.add_argument("--version", required=True)
    parser.add_argument("--tag", required=True)
    parser.add_argument("--root", required=True)
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()

    dist_info = f"softtpu-{args.version}.dist-info"
    entries = []
    for path in sorted(args.files, key=lambda p: _archive_name(p, args.root)):
        with open(path, "rb") as f:
            data = f.read()
        name = _archive_name(path, args.root)
        # Bazel marks every genrule output executable; only programs and
        # shared objects should be.
        executable = os.access(path, os.X_OK) and not name.endswith(".py")
        entries.append((name, data, executable))
    for name, text in (("METADATA", _METADATA), ("WHEEL", _WHEEL),
                       ("entry_points.txt", _ENTRY_POINTS),
                       ("top_level.txt", "softtpu\n")):
        content = text.format(version=args.version, tag=args.tag)
        entries.append((f"{dist_info}/{name}", content.encode(), False))

    record = [_record_line(name, data) for name, data, _ in entries]
    record.append(f"{dist_info}/RECORD,,")
    with zipfile.ZipFile(args.out, "w") as archive:
        for name, data, executable in entries:
            _add(archive, name, data, executable)
        _add(archive, f"{dist_info}/RECORD",
             ("\n".join(record) + "\n").encode(), False)


if __name__ == "__main__":
    main()
