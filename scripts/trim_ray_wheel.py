"""Ray's wheel cut down to what Ray Serve runs on: for the GPU device calls, whose
carried files are limited to 64 MiB (the full wheel is 79 MB). Strips the three
native binaries' symbols, drops the Java jar, the dashboard's web client and the
libraries Serve does not import (RLlib, Data, Tune, Train, LLM); ``pip install``
takes the result like the original.

    python scripts/trim_ray_wheel.py ray-2.60.0-cp312-...whl -o .whl-serve/
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

DROPPED = ("ray/jars/", "ray/dashboard/client/build/", "ray/rllib/", "ray/data/", "ray/tune/", "ray/train/", "ray/llm/")
STRIPPED = ("ray/_raylet.so", "ray/core/src/ray/gcs/gcs_server", "ray/core/src/ray/raylet/raylet")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("wheel", type=Path)
    parser.add_argument("-o", "--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    target = args.out / args.wheel.name
    with (
        tempfile.TemporaryDirectory() as tmp,
        zipfile.ZipFile(args.wheel) as src,
        zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as dst,
    ):
        for info in src.infolist():
            if info.filename.startswith(DROPPED):
                continue
            data = src.read(info)
            if info.filename in STRIPPED:
                raw = Path(tmp) / "binary"
                raw.write_bytes(data)
                subprocess.run(["strip", "--strip-unneeded", str(raw)], check=True)
                data = raw.read_bytes()
            if info.filename.endswith(".dist-info/RECORD"):  # entries of dropped files go; changed hashes are left out
                lines = [line for line in data.decode().splitlines() if not line.startswith(DROPPED)]
                data = (
                    "\n".join(line if not line.startswith(STRIPPED) else line.split(",")[0] + ",," for line in lines) + "\n"
                ).encode()
            dst.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED)
    print(f"{target}: {target.stat().st_size / 1e6:.1f} MB (from {args.wheel.stat().st_size / 1e6:.1f} MB)")
    shutil.copystat(args.wheel, target)


if __name__ == "__main__":
    main()
