#!/usr/bin/env python3
"""Load time of the web console in headless Chromium, against ``sowctl serve --demo``.

    python bench/bench_console.py               # 15 runs of each, interleaved; medians
    python bench/bench_console.py --runs 30 --json

Needs Debian's ``chromium`` (``apt-get install -y chromium``) and Playwright (the test
extra). Every run is a fresh browser context (empty cache, empty session storage), as a
person opening the link ``serve --demo`` prints:

* ``baseline``: ``GET /healthz`` opened as a page (one request, no script): what the
  server, the loopback and the browser cost before the console does anything;
* ``projects``: the demo link until the project list is shown (the page, its CSS and
  scripts, ``/projects`` and ``/api/sows``);
* ``sow graph``: ``/#/sow/SOW/graph`` until the dependency graph is drawn (plus the
  chain report and the SOW list);
* ``docs``: ``/docs`` until Swagger UI shows the operations (a 1.5 MB script).

Target: the console's pages under 1 s. Times are wall clock from the navigation's start;
the ratio to the baseline is printed too, since the machine's load moves both alike.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_MS = 1000
SOW = "sow-tower-a-ph1"


def start_server(folder: Path) -> tuple[subprocess.Popen, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOWCTL_")}
    env["PYTHONUNBUFFERED"] = "1"
    command = [sys.executable, "-m", "sowctl", "--db", str(folder / "demo.db"), "serve", "--port", "0"]
    server = subprocess.Popen(
        [*command, "--demo", "--quiet"], stdout=subprocess.PIPE, text=True, env=env, start_new_session=True
    )
    deadline = time.monotonic() + 30
    for line in server.stdout:
        if line.strip().startswith("console:"):
            return server, line.split("console:", 1)[1].strip()
        if time.monotonic() > deadline:
            break
    server.kill()
    raise SystemExit("sowctl serve --demo did not print its console link")


def measure(browser, link: str, runs: int) -> dict[str, list[float]]:
    base = link.split("/#", 1)[0]
    token = re.search(r"#token=([^&]+)", link).group(1)
    cases = {
        "baseline": (f"{base}/healthz", "body"),
        "projects": (link, "a[data-sow]"),
        "sow graph": (f"{base}/#/sow/{SOW}/graph", "svg.graph .node"),
        "docs": (f"{base}/docs", ".opblock"),
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(runs):
        for name, (url, ready) in cases.items():  # interleaved: a change of load hits all alike
            context = browser.new_context(viewport={"width": 1280, "height": 800})
            context.add_init_script(f"sessionStorage.setItem('sowctl.token', {json.dumps(token)})")
            page = context.new_page()
            started = time.perf_counter()
            page.goto(url)
            page.wait_for_selector(ready)
            times[name].append((time.perf_counter() - started) * 1000)
            context.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    with tempfile.TemporaryDirectory() as folder:
        server, link = start_server(Path(folder))
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=chromium)
                measure(browser, link, 1)  # warm-up: the server's first requests, the browser's first tab
                times = measure(browser, link, args.runs)
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=15)
    medians = {name: statistics.median(values) for name, values in times.items()}
    rows = {
        name: {
            "median_ms": round(medians[name], 1),
            "max_ms": round(max(values), 1),
            "vs_baseline": round(medians[name] / medians["baseline"], 2),
            "target_met": name == "baseline" or max(values) < TARGET_MS,
        }
        for name, values in times.items()
    }
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{args.runs} runs each, fresh context per run; load average {os.getloadavg()[0]:.1f}")
    print(f"{'page':<10} {'median ms':>10} {'max ms':>8} {'vs baseline':>12}  under {TARGET_MS} ms")
    for name, row in rows.items():
        met = "" if name == "baseline" else ("yes" if row["target_met"] else "NO")
        print(f"{name:<10} {row['median_ms']:>10} {row['max_ms']:>8} {row['vs_baseline']:>11}x  {met}")


if __name__ == "__main__":
    main()
