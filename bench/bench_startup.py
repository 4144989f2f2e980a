#!/usr/bin/env python3
"""Start-up time of the CLI, as ratios against a minimal two-command Typer app.

    python bench/bench_startup.py            # 20 runs of each, interleaved; medians
    python bench/bench_startup.py --runs 40 --json
    python bench/bench_startup.py --user-install   # in a fresh venv made as the README's set-up

What is compared, each as a fresh process (the way a user or a script runs it):

* ``baseline --help``: a minimal Typer app with two commands (written to a temp
  file), against ``sowctl --help``. Target: at most 1.2x.
* ``baseline hello``: the same app running a command, against a local
  ``sowctl items list SOW --json`` on a SOW of 1,000 items. Target: at most 2x.
* ``sowctl --server ... items get X --json`` is measured too (no target: it
  depends on the network), against a closed port, so it measures start-up and
  the import of httpx only.

Commands are run interleaved (A, B, C, A, B, C, ...) so that a change of machine
load hits every command alike; medians of wall time and of CPU time (user +
system of the child, which other load hardly changes) are reported. Absolute
times depend on the machine; the ratios are what the targets are about.

Both sides import what the running venv holds, so the ratio depends on it: Typer 0.29
imports pydantic when a Typer app starts (the baseline pays it too), Typer 0.27 does not;
peewee imports psycopg2 when it is installed (the ``postgres`` and ``test`` extras).
``--user-install`` first makes a fresh venv with ``pip install -e .`` (no extras: the
README's set-up, the newest versions the ranges allow) and measures there.

Python bytecode is written to a temporary PYTHONPYCACHEPREFIX (and a
PYTHONDONTWRITEBYTECODE in the environment is dropped), as an installed package
has its .pyc files: otherwise every run would compile sowctl from source, which
is not what a user's start-up costs.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

BASELINE_APP = '''\
import typer

app = typer.Typer()


@app.command()
def hello(name: str = "world") -> None:
    """Say hello."""
    print(f"hello {name}")


@app.command()
def goodbye(name: str = "world") -> None:
    """Say goodbye."""
    print(f"goodbye {name}")


if __name__ == "__main__":
    app()
'''

TARGETS = {"help": 1.2, "items_list": 2.0}
ITEMS = 1000


def sowctl_command() -> list[str]:
    """The installed console script, as users run it (else ``python -m sowctl``)."""
    script = Path(sys.executable).parent / "sowctl"
    if script.exists():
        return [str(script)]
    found = shutil.which("sowctl")
    return [found] if found else [sys.executable, "-m", "sowctl"]


def build_database(path: Path) -> str:
    """A SQLite database with one SOW of 1,000 items (and nothing heavy beside it)."""
    from gen_dataset import big_dataset

    from sowctl.services.dataset import import_dataset
    from sowctl.storage.database import open_database

    data = big_dataset(sows=1, items=ITEMS, deps=0, today=datetime.date.today())
    database = open_database(str(path))
    import_dataset(data)
    database.close()
    return data["sows"][0]["id"]


def run_once(argv: list[str], env: dict[str, str], expect: int = 0) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child: user + system) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != expect:
        raise SystemExit(
            f"{' '.join(argv)} exited {done.returncode} (expected {expect}):\n{done.stderr.decode()}"
        )
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def measure(
    commands: dict[str, tuple[list[str], int]], runs: int, env: dict[str, str]
) -> dict[str, list[tuple[float, float]]]:
    for argv, expect in commands.values():  # warm the OS file cache and write the .pyc files
        run_once(argv, env, expect)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, (argv, expect) in commands.items():
            times[name].append(run_once(argv, env, expect))
    return times


RATIOS = {  # name: (command, baseline)
    "help": ("sowctl_help", "baseline_help"),
    "items_list": ("items_list", "baseline_hello"),
    "remote_get": ("remote_get", "baseline_hello"),
}


def _in_user_install(argv: list[str]) -> int:
    """Run this benchmark again in a fresh venv holding sowctl as the README installs it."""
    with tempfile.TemporaryDirectory(prefix="sowctl-bench-venv-") as tmp:
        venv = Path(tmp) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check"]
        subprocess.run([*pip, "-e", str(HERE.parent)], check=True, stderr=subprocess.DEVNULL)
        versions = (
            "import typer, pydantic, peewee; print(typer.__version__, pydantic.VERSION, peewee.__version__)"
        )
        shown = subprocess.run([str(venv / "bin" / "python"), "-c", versions], capture_output=True, text=True)
        print(f"fresh venv: typer, pydantic, peewee = {shown.stdout.strip()}", file=sys.stderr)
        return subprocess.run([str(venv / "bin" / "python"), __file__, *argv]).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="runs of each command (default 20)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument(
        "--user-install", action="store_true", help="measure in a fresh venv made by `pip install -e .`"
    )
    args = parser.parse_args(argv)
    if args.user_install:
        return _in_user_install([arg for arg in (argv or sys.argv[1:]) if arg != "--user-install"])

    with tempfile.TemporaryDirectory(prefix="sowctl-bench-") as tmp:
        tmpdir = Path(tmp)
        app = tmpdir / "baseline_app.py"
        app.write_text(BASELINE_APP)
        db = tmpdir / "bench.db"
        sow = build_database(db)
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith("SOWCTL_") and key != "PYTHONDONTWRITEBYTECODE"
        }
        # Bytecode as an installed package has it (pip compiles at install time), kept out
        # of the source tree. Without it every run compiles sowctl's modules from source.
        env["PYTHONPYCACHEPREFIX"] = str(tmpdir / "pycache")
        env |= {"SOWCTL_CONFIG": str(tmpdir / "config.toml"), "NO_COLOR": "1", "SOWCTL_RETRIES": "0"}
        sowctl = sowctl_command()
        python = [sys.executable]
        commands = {
            "baseline_help": ([*python, str(app), "--help"], 0),
            "sowctl_help": ([*sowctl, "--help"], 0),
            "baseline_hello": ([*python, str(app), "hello"], 0),
            "items_list": ([*sowctl, "--db", str(db), "items", "list", sow, "--json"], 0),
            "remote_get": (
                [*sowctl, "--server", "http://127.0.0.1:9", "--token", "t", "items", "get", "x", "--json"],
                5,
            ),
        }
        times = measure(commands, args.runs, env)

    wall = {name: statistics.median(w for w, _ in values) for name, values in times.items()}
    cpu = {name: statistics.median(c for _, c in values) for name, values in times.items()}
    results = {
        "runs": args.runs,
        "python": sys.version.split()[0],
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "median_ms": {name: round(value * 1000, 1) for name, value in wall.items()},
        "median_cpu_ms": {name: round(value * 1000, 1) for name, value in cpu.items()},
        "ratios": {name: round(wall[a] / wall[b], 2) for name, (a, b) in RATIOS.items()},
        "cpu_ratios": {name: round(cpu[a] / cpu[b], 2) for name, (a, b) in RATIOS.items()},
        "targets": TARGETS,
    }
    results["met"] = {name: results["ratios"][name] <= limit for name, limit in TARGETS.items()}
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        ms, cpu_ms = results["median_ms"], results["median_cpu_ms"]
        ratios, cpu_ratios = results["ratios"], results["cpu_ratios"]
        rows = [
            ("baseline Typer app --help", "baseline_help", None),
            ("sowctl --help", "sowctl_help", "help"),
            ("baseline Typer app hello", "baseline_hello", None),
            ("sowctl items list (1,000) --json", "items_list", "items_list"),
            ("sowctl remote items get (refused)", "remote_get", "remote_get"),
        ]
        print(
            f"{args.runs} runs each, interleaved; medians (Python {results['python']}, "
            f"load average {results['load_average'][0]})"
        )
        print(f"  {'':<34} {'wall':>8} {'cpu':>8}   {'ratio':>5} {'(cpu)':>6}  target")
        for label, key, ratio in rows:
            line = f"  {label:<34} {ms[key]:6.1f}ms {cpu_ms[key]:6.1f}ms"
            if ratio:
                target = TARGETS.get(ratio)
                line += f"   {ratios[ratio]:4.2f}x {cpu_ratios[ratio]:5.2f}x"
                line += f"  <= {target}x" if target else ""
            print(line)
    return 0 if all(results["met"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
