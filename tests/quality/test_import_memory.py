"""A CLI import streams its file: the importing process grows by about the size of the file,
not by many times it (it held the parsed file, its validated records and its rows at once:
about 10x the file). Memory, not time: the peak resident size of a child process is
deterministic enough to assert on, on any machine load.
"""

from __future__ import annotations

import importlib.util
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# The child reports its own peak resident size, whatever the import's outcome: VmHWM, as
# getrusage's ru_maxrss would include the forking test process's own peak (Linux keeps it
# across exec).
CHILD = """
import sys
from sowctl.cli import main
try:
    sys.exit(main())
finally:
    with open("/proc/self/status") as status:
        peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    sys.stderr.write(f"\\nmaxrss={peak}\\n")
"""


def generator():
    spec = importlib.util.spec_from_file_location("bench_gen_dataset", ROOT / "bench" / "gen_dataset.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_import(dataset: Path, db: Path, *, address_space: int | None = None) -> tuple[int, str, int]:
    """``sowctl import`` in a child: its exit code, its stderr (without the peak) and its peak
    resident size. ``address_space`` caps the child's memory (RLIMIT_AS), so that code which
    would take gigabytes fails there rather than take them from the machine."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOWCTL_")}
    command = [sys.executable, "-c", CHILD, "--db", str(db), "import", "--json", str(dataset)]

    def cap() -> None:
        if address_space is not None:
            resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))

    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, preexec_fn=cap)
    stderr, _, peak = result.stderr.rpartition("maxrss=")
    return result.returncode, stderr.strip(), int(peak.split()[0]) * 1024


def import_peak_bytes(dataset: Path, db: Path) -> int:
    code, stderr, peak = run_import(dataset, db)
    assert code == 0, stderr[-2000:]
    return peak


@pytest.mark.slow
def test_a_cli_import_grows_by_less_than_two_and_a_half_times_the_file(tmp_path: Path) -> None:
    gen = generator()
    small, big = tmp_path / "small.json", tmp_path / "big.json"
    small.write_text(json.dumps(gen.big_dataset(1, 10, 10)), encoding="utf-8")
    data = gen.big_dataset(10, 40_000, 40_000)
    big.write_text(json.dumps(data, separators=(",", ":")), encoding="utf-8")
    del data
    size = big.stat().st_size
    assert size > 15_000_000  # big enough for the growth to be the import's, not noise

    baseline = import_peak_bytes(small, tmp_path / "small.db")  # interpreter, modules, SQLite
    peak = import_peak_bytes(big, tmp_path / "big.db")
    growth = peak - baseline
    assert growth < 2.5 * size, (  # 1.5x now (SQLite page cache included); 11x before it streamed
        f"importing a {size / 1e6:.1f} MB file grew the process by {growth / 1e6:.1f} MB "
        f"({growth / size:.1f}x the file; peak {peak / 1e6:.0f} MB, baseline {baseline / 1e6:.0f} MB)"
    )


@pytest.mark.slow
@pytest.mark.parametrize("levels", [20_000, 1_000_000])  # a 40 KB and a 2 MB file
def test_a_deeply_nested_file_is_refused_in_the_memory_of_a_small_import(tmp_path: Path, levels: int) -> None:
    """The streaming parser's memory grew with the square of the nesting: 1.0 GiB for the
    40 KB file, 10 GB and more for the 2 MB one. The depth is now measured before the parser
    reads each piece, in memory that does not grow with it."""
    small = tmp_path / "small.json"
    small.write_text(json.dumps(generator().big_dataset(1, 10, 10)), encoding="utf-8")
    baseline = import_peak_bytes(small, tmp_path / "small.db")
    deep = tmp_path / "deep.json"
    item = {"id": "i-1", "sowId": "s", "title": "t", "type": "task_item", "description": "DEEP"}
    text = json.dumps({"items": [item]}).replace('"DEEP"', "[" * levels + "]" * levels)
    deep.write_text(text)
    column = text.index("[[") + 64 - 2  # the description's brackets start at level 4

    code, stderr, peak = run_import(deep, tmp_path / "deep.db", address_space=2 * 1024**3)

    assert code == 2, stderr[-2000:]
    where = f"(line 1, column {column})"
    refusal = json.loads(stderr)  # --json: the error is one JSON object
    assert refusal["code"] == "invalid_input" and refusal["exitCode"] == 2
    assert refusal["message"] == f"{deep}: arrays and objects are nested more than 64 levels deep {where}"
    assert peak - baseline < 20 * 1024 * 1024, f"peak {peak / 1e6:.0f} MB, baseline {baseline / 1e6:.0f} MB"
    assert not (tmp_path / "deep.db").exists()
