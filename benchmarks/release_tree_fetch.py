"""Bytes and seconds to read one vLLM release tree from PyPI: only its sources (HTTP ranges), and, with
``--full``, the way it was read before (``pip download`` of the whole wheel, then unzipping the sources).

Both write into a temporary directory, never the shared cache. Prints the machine's load average, since the
machine is shared. Run:

    python benchmarks/release_tree_fetch.py [--version 0.19.0] [--full]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tools.release_trees import fetch_tree, is_tree_member  # noqa: E402


def full_download(version: str, into: Path) -> tuple[int, int]:
    """The whole wheel by pip, then its sources unzipped: (bytes downloaded, files)."""
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-cache-dir", "--no-deps",
                    "--only-binary=:all:", "-d", str(into), f"vllm=={version}"], check=True)
    (wheel,) = into.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = [name for name in archive.namelist() if is_tree_member(name)]
        for name in names:
            archive.extract(name, into / "tree")
    return wheel.stat().st_size, len(names)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default="0.19.0")
    parser.add_argument("--full", action="store_true", help="also time the whole-wheel download (300-450 MB)")
    args = parser.parse_args()
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as scratch:
        began = time.perf_counter()
        transfer = fetch_tree(args.version, Path(scratch), progress=lambda line: None)
        took = time.perf_counter() - began
        print(f"ranges: vllm=={args.version}: {transfer.bytes / 1e6:7.1f} MB in {transfer.requests} requests, "
              f"{took:5.1f} s, {transfer.members} files")
    if args.full:
        with tempfile.TemporaryDirectory() as scratch:
            began = time.perf_counter()
            size, files = full_download(args.version, Path(scratch))
            took = time.perf_counter() - began
            print(f"whole wheel: vllm=={args.version}: {size / 1e6:7.1f} MB, {took:5.1f} s, {files} files")


if __name__ == "__main__":
    main()
