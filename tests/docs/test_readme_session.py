"""The README's first session ("Scripting from a shell", also the tutorial's first session),
run as written in a fresh shell: its ``sh`` blocks, in order, in ``bash -e`` with a new HOME
and config dirs, no SOWCTL_* variables, and only the virtual environment's ``bin`` added to
PATH. It must not need port 8000, which ``serve --demo`` holds after the README's set-up, and
every wait in it is bounded. The one change: the example port 8765 becomes a free port, since
other servers run on this machine."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def sh_blocks(page: str, heading: str) -> list[str]:
    text = (ROOT / page).read_text()
    section = text.split(heading + "\n", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    return re.findall(r"```sh\n(.*?)```", section, flags=re.S)


def first_session_blocks() -> list[str]:
    return sh_blocks("README.md", "### Scripting from a shell")


def test_the_tutorial_starts_with_the_readme_session():
    assert sh_blocks("docs/tutorial.md", "## A first session") == first_session_blocks()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def fresh_shell_env(home: Path) -> dict[str, str]:
    venv_bin = str(Path(sys.executable).parent)
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "PATH": os.pathsep.join([venv_bin, "/usr/local/bin", "/usr/bin", "/bin"]),
        "LANG": "C.UTF-8",
        "NO_COLOR": "1",
    }


def test_the_first_session_runs_as_written(tmp_path):
    blocks = first_session_blocks()
    assert len(blocks) == 2, "the first session has a local block and a server block"
    assert "<" not in "".join(blocks), "no placeholders: the session runs as written"
    assert "until " not in "".join(blocks), "every wait is bounded"
    demo_port = re.search(r"(:|--port )8000\b", "".join(blocks))
    assert not demo_port, "the demo server of the README's set-up holds port 8000"
    script = "\n".join(blocks).replace("8765", str(free_port()))
    work = tmp_path / "work"
    work.mkdir()
    shell = subprocess.Popen(
        ["bash", "-e", "-c", script],
        cwd=work,
        env=fresh_shell_env(tmp_path / "home"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: a server it leaves behind is stopped below
    )
    try:
        out, err = shell.communicate(timeout=120)
    finally:
        try:
            os.killpg(shell.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        shell.wait()
    assert shell.returncode == 0, f"stdout:\n{out}\nstderr:\n{err}"
    assert "exit 1: the chain has a risk" in out
    # The tree, printed twice (locally, then over HTTP), identically.
    trees = re.findall(r"^Structure\trequirement\t.*(?:\n  .*)*", out, flags=re.M)
    assert len(trees) == 2 and trees[0] == trees[1], out
    assert trees[0].splitlines()[0] == "Structure\trequirement\tin_progress\tstructure"
    assert (work / "tower.db").exists()
    # Nothing was written to the default database that `serve --demo` uses.
    assert not list((tmp_path / "home").rglob("sowctl.db"))
