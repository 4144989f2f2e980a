"""`sowctl chain check` with every report against a plain `chain check`, on one 50,000-dependency SOW.

Builds the chain-heavy SOW of ``bench_graph`` (``gen_dataset.chain_heavy_sow``: 10,000 items,
50,000 dense, mostly ordered dependencies with random risks, statuses and SLA dates; here a tenth
also get an escalation date and a third of the task items are in progress, so every risk kind has
findings) in a fresh SQLite file, then runs, each as a fresh process, interleaved ``--runs`` times:

* plain: ``sowctl --db FILE chain check SOW --fail-on <every kind>`` (piped summary);
* reports: the same plus ``--report`` sarif, junit, gitlab and markdown files.

Medians of wall and CPU time (user + system of the child); the target is reports/plain <= 2.
Usage: ``python bench/bench_chain_check.py [--items 10000] [--deps 50000] [--runs 5]``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_graph import load
from gen_dataset import chain_heavy_sow

from sowctl.gate.risks import RISK_KINDS
from sowctl.storage import models as m
from sowctl.storage.database import open_database

TODAY = datetime.date.today()  # the CLI judges dates by the real clock


def build(path: Path, items: int, deps: int) -> str:
    database = open_database(str(path))
    sow_id = load(chain_heavy_sow(items, deps, today=TODAY))
    rng = random.Random(7)
    dep_ids = [row[0] for row in m.Dependency.select(m.Dependency.id).tuples()]
    item_ids = [row[0] for row in m.Item.select(m.Item.id).where(m.Item.type == "task_item").tuples()]
    with m.database_proxy.atomic():
        for chunk in range(0, len(dep_ids), 500):
            ids = [d for d in dep_ids[chunk : chunk + 500] if rng.random() < 0.1]
            when = TODAY - datetime.timedelta(days=rng.randint(-30, 30))
            m.Dependency.update(escalation_date=when).where(m.Dependency.id.in_(ids)).execute()
        started = [i for i in item_ids if rng.random() < 0.33]
        for chunk in range(0, len(started), 500):
            m.Item.update(status="in_progress").where(m.Item.id.in_(started[chunk : chunk + 500])).execute()
    database.close()
    return sow_id


def timed(args: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(args)} failed ({done.returncode}): {done.stderr}")
    return wall, cpu, done.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--deps", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        db = folder / "bench.db"
        sow_id = build(db, args.items, args.deps)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SOWCTL_", "GITHUB_"))}
        env["SOWCTL_CONFIG"] = str(folder / "config.toml")
        base = [sys.executable, "-m", "sowctl", "--db", str(db), "chain", "check", sow_id]
        base += ["--fail-on", ",".join(RISK_KINDS)]
        reports = []
        outputs = {"sarif": "r.sarif", "junit": "r.xml", "gitlab": "r.json", "markdown": "r.md"}
        for fmt, name in outputs.items():
            reports += ["--report", f"{fmt}={folder / name}"]
        timed(base, env)  # warm the page cache and the bytecode
        samples: dict[str, list[tuple[float, float]]] = {"plain": [], "reports": []}
        for _ in range(args.runs):
            for name, command in (("plain", base), ("reports", [*base, *reports])):
                wall, cpu, _code = timed(command, env)
                samples[name].append((wall, cpu))
        sizes = {name: (folder / name).stat().st_size for name in outputs.values()}
        findings = subprocess.run([*base, "--json"], env=env, capture_output=True, text=True).stdout
        counts = json.loads(findings)["counts"]
    medians = {
        name: (statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs))
        for name, runs in samples.items()
    }
    print(
        f"{datetime.date.today()}; {platform.system()} {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}; load average {os.getloadavg()[0]:.1f}; "
        f"{args.items} items, {args.deps} dependencies; findings {counts}; "
        f"report bytes {sizes}; medians of {args.runs} runs"
    )
    print("| command | wall | CPU |")
    print("|---|---|---|")
    for name, (wall, cpu) in medians.items():
        print(f"| {name} | {wall * 1000:.0f} ms | {cpu * 1000:.0f} ms |")
    ratio_wall = medians["reports"][0] / medians["plain"][0]
    ratio_cpu = medians["reports"][1] / medians["plain"][1]
    print(f"| ratio reports/plain | {ratio_wall:.2f}x | {ratio_cpu:.2f}x |  (target <= 2x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
