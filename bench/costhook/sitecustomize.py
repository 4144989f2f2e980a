"""Loaded at start-up by a server that ``bench/cost.py`` measures (its directory comes first
on ``PYTHONPATH``): counts the statements the process sends. Nothing happens without
``SOWCTL_BENCH_COUNTS``."""

import os
import sys

if os.environ.get("SOWCTL_BENCH_COUNTS"):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        import cost
    finally:
        del sys.path[0]
    cost.count_in_this_process(os.environ["SOWCTL_BENCH_COUNTS"])
