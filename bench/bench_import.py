#!/usr/bin/env python3
"""Import (and export) speed on a big dataset, into a fresh SQLite file.

    python bench/bench_import.py                       # 20 SOWs, 100,000 items, 100,000 dependencies
    python bench/bench_import.py --items 20000 --deps 20000 --runs 3
    python bench/bench_import.py --write BENCHMARKS.md # also record the figures there

Three measurements per run, each import into a new database file:

* ``service``: ``sowctl.services.dataset.import_dataset(data)`` on the parsed dataset
  (full validation, reference checks, inserts, commit);
* ``cli``: ``sowctl --db FILE import dataset.json`` in a subprocess, so start-up,
  JSON parsing and the summary are included: what a user waits for;
* ``export``: ``export_dataset()`` of the database the service run filled.

Each is reported as wall time and as CPU time (user + system of this process or
of the child). On a shared machine the wall time grows with the load; the CPU
time is the work the import itself does. The best run counts.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
SECTION = "## Import"


@dataclass
class Timing:
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)

    def add(self, wall: float, cpu: float) -> str:
        self.wall.append(wall)
        self.cpu.append(cpu)
        return f"{wall:.2f}s wall, {cpu:.2f}s CPU"


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_gen_dataset", ROOT / "bench" / "gen_dataset.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def measure_service(data: dict, db_path: Path) -> tuple[tuple[float, float], tuple[float, float]]:
    """((wall, cpu) of the import, (wall, cpu) of the export), in this process."""
    from sowctl.services.dataset import export_dataset, import_dataset
    from sowctl.storage.database import open_database

    database = open_database(str(db_path))
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        import_dataset(data)
        imported = (time.perf_counter() - wall, time.process_time() - cpu)
        wall, cpu = time.perf_counter(), time.process_time()
        export_dataset()
        exported = (time.perf_counter() - wall, time.process_time() - cpu)
    finally:
        database.close()
    return imported, exported


# The child reports its own peak resident size: VmHWM, as getrusage's ru_maxrss of a child
# would include this (forking) process's own peak, which Linux keeps across exec.
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


def measure_cli(dataset_file: Path, db_path: Path, tree: Path | None = None) -> tuple[float, float, float]:
    """(wall, cpu, peak MB) of ``sowctl import`` in a child process; ``tree``: another checkout's code."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOWCTL_")}
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    command = [sys.executable, "-c", CHILD, "--db", str(db_path), "import", "--json", str(dataset_file)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    # `python -c` puts the working directory first on sys.path: the tree's code, not this one's.
    cwd = tree if tree is not None else ROOT
    result = subprocess.run(
        command, check=True, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak_mb = int(result.stderr.decode().rsplit("maxrss=", 1)[1].split()[0]) / 1024
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), peak_mb


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sows", type=int, default=20)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--deps", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=2, help="runs of each measurement (best counts)")
    parser.add_argument("--write", type=Path, help="add or replace the '## Import' section of this file")
    parser.add_argument(
        "--compare",
        type=Path,
        help="also run `sowctl import` with the code of this checkout (e.g. `git archive main`), same file",
    )
    args = parser.parse_args(argv)

    data = load_generator().big_dataset(args.sows, args.items, args.deps)
    records = sum(len(value) for value in data.values())
    timings = {"service": Timing(), "cli": Timing(), "export": Timing()}
    if args.compare:
        timings["compare"] = Timing()
    peaks: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="sowctl-bench-") as tmp:
        dataset_file = Path(tmp) / "dataset.json"
        dataset_file.write_text(json.dumps(data, separators=(",", ":")), encoding="utf-8")
        size_mb = dataset_file.stat().st_size / 1e6
        print(f"{records:,} records ({args.items:,} items, {args.deps:,} dependencies), {size_mb:.1f} MB")
        for run in range(args.runs):
            parsed = json.loads(dataset_file.read_text(encoding="utf-8"))
            imported, exported = measure_service(parsed, Path(tmp) / f"service-{run}.db")
            del parsed
            print(f"run {run + 1}: service import {timings['service'].add(*imported)}", end="; ")
            print(f"export {timings['export'].add(*exported)}", end="; ")
            wall, cpu, peaks["cli"] = measure_cli(dataset_file, Path(tmp) / f"cli-{run}.db")
            print(f"cli import {timings['cli'].add(wall, cpu)}, peak {peaks['cli']:.0f} MB")
            if args.compare:
                wall, cpu, peaks["compare"] = measure_cli(
                    dataset_file, Path(tmp) / f"old-{run}.db", args.compare
                )
                timing = timings["compare"].add(wall, cpu)
                print(f"  compared code: cli import {timing}, peak {peaks['compare']:.0f} MB")
    for name, timing in timings.items():
        wall, cpu = min(timing.wall), min(timing.cpu)
        print(f"best {name}: {wall:.2f}s wall ({records / wall:,.0f} records/s), {cpu:.2f}s CPU "
              f"({records / cpu:,.0f} records/s)")  # fmt: skip
    for name, peak in peaks.items():
        print(f"{name} import peak memory: {peak:.0f} MB, {peak / size_mb:.2f}x the {size_mb:.1f} MB file")
    if args.write:
        write_section(args.write, section(args, records, size_mb, timings, peaks))
        print(f"wrote the '{SECTION}' section of {args.write}")
    return 0


def section(
    args: argparse.Namespace,
    records: int,
    size_mb: float,
    timings: dict[str, Timing],
    peaks: dict[str, float],
) -> str:
    machine = (
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
        f"; load average {os.getloadavg()[0]:.1f} at the end: other processes shared the CPUs"
    )
    labels = {
        "service": "`import_dataset()`: validate, check references, insert, commit",
        "cli": "`sowctl import dataset.json`: process start, JSON parse, the above, summary",
        "export": "`export_dataset()` of the imported database",
        "compare": "the same `sowctl import`, code of `--compare` (before streaming)",
    }
    rows = []
    for name, timing in timings.items():
        wall, cpu = min(timing.wall), min(timing.cpu)
        rows.append(
            f"| {labels[name]} | {wall:.2f} s | {records / wall:,.0f} | {cpu:.2f} s | {records / cpu:,.0f} |"
        )
    runs = "; ".join(
        f"{name} " + ", ".join(f"{w:.1f}/{c:.1f}" for w, c in zip(t.wall, t.cpu, strict=True))
        for name, t in timings.items()
    )
    return "\n".join(
        [
            SECTION,
            "",
            f"`python bench/bench_import.py --sows {args.sows} --items {args.items} --deps {args.deps}"
            f" --runs {args.runs}{' --compare OLD' if args.compare else ''}` ({time.strftime('%Y-%m-%d')};"
            f" {machine}). SQLite file in WAL mode."
            + (
                " OLD: `git archive` of the code before the streamed import, unpacked."
                if args.compare
                else ""
            ),
            "",
            f"Dataset: `bench/gen_dataset.big_dataset({args.sows}, {args.items}, {args.deps})`, "
            f"{records:,} records, {size_mb:.1f} MB of JSON. Best of {args.runs} runs, each into a new file; "
            "CPU is user + system time of the importing process, which the load on the machine hardly "
            "changes, while wall time grows with it:",
            "",
            "| measurement | wall | records/s (wall) | CPU | records/s (CPU) |",
            "|---|---|---|---|---|",
            *rows,
            "",
            f"Every run, wall/CPU seconds: {runs}.",
            "",
            "Peak resident memory of the `sowctl import` process (VmHWM, last run):",
            "",
            "| code | peak | x file size |",
            "|---|---|---|",
            *(
                f"| {'streamed import (this code)' if name == 'cli' else 'before (--compare)'} "
                f"| {peak:.0f} MB | {peak / size_mb:.2f}x |"
                for name, peak in peaks.items()
            ),
            "",
            *ratios(records, timings, peaks),
            "Targets: at least 10,000 records/s with full validation; 100,000 items + 100,000 dependencies "
            "in under 20 s; peak memory at most twice the file, and at least 20,000 records/s.",
            "",
            "Where the time goes: pydantic validation of every record (Rust core, one `TypeAdapter` call "
            "per batch of 1,000), reference checks against in-memory dicts (no query per record), and "
            "multi-row INSERTs of up to 1,000 rows that reuse one statement text (peewee's `insert_many` "
            "spends about 3 µs per value building SQL: it took 25 s for this dataset). The cyclic garbage "
            "collector is paused while the file is imported.",
            "",
            "Where the memory goes: `sowctl import FILE` streams the file (ijson, C backend): a first "
            "pass counts the records of each kind, then each kind is read, validated, checked and "
            "inserted in batches inside one write transaction, keeping only compact facts per id "
            "(items: SOW, type, parent) for later kinds' reference checks. An item's row goes in as "
            "soon as its parent's has (the hierarchy is checked on the facts after, and a refusal "
            "rolls it all back), so items in tree order, as this dataset and `sowctl export` have "
            "them, are read once; only items that come before their parent are read again. Each "
            "kind's pass over the file stops at its last record, and the search for unstorable text "
            "(NUL) runs only when the first pass saw a `\\u0000` escape. The streaming costs CPU: the "
            "file is parsed by the first pass and again by each kind's (about 0.7 s per pass over "
            "these 53 MB). What remains of the peak: the interpreter and its modules (about 50 MB), "
            "the per-id facts, and an 8 MB SQLite page cache (the import lowers the connection's "
            "32 MB while it writes).",
            "",
        ]
    )


def ratios(records: int, timings: dict[str, Timing], peaks: dict[str, float]) -> list[str]:
    """The streamed CLI import against the compared code, same file, same run."""
    if "compare" not in timings:
        return []
    new, old = min(timings["cli"].cpu), min(timings["compare"].cpu)
    return [
        f"Same run, streamed against before: peak memory {peaks['cli'] / peaks['compare']:.2f}x "
        f"({peaks['cli']:.0f} MB against {peaks['compare']:.0f} MB); CPU time {new / old:.2f}x, so "
        f"{records / new:,.0f} records per CPU second against {records / old:,.0f}.",
        "",
    ]


def write_section(path: Path, text: str) -> None:
    """Replace this benchmark's own section, or append it; other sections stay as they are."""
    current = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n"
    lines = current.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.rstrip() == SECTION), None)
    if start is None:
        updated = current.rstrip("\n") + "\n\n" + text
    else:
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
        updated = "".join(lines[:start]) + text + ("\n" + "".join(lines[end:]) if end < len(lines) else "")
    temp = path.with_suffix(path.suffix + ".tmp")
    temp.write_text(updated, encoding="utf-8")
    os.replace(temp, path)


if __name__ == "__main__":
    sys.exit(main())
