"""A CLI import streams its file: the importing process grows by about the size of the file,
not by many times it (it held the parsed file, its validated records and its rows at once:
about 10x the file). Memory, not time: the peak resident size of a child process is
deterministic enough to assert on, on any machine load.
"""

from __future__ import annotations

import importlib.util
import json
import os
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
    main()
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


def import_peak_bytes(dataset: Path, db: Path) -> int:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOWCTL_")}
    command = [sys.executable, "-c", CHILD, "--db", str(db), "import", "--json", str(dataset)]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return int(result.stderr.rsplit("maxrss=", 1)[1].split()[0]) * 1024


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
