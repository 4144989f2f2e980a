"""Write docs/cli.md, the CLI reference, from the commands themselves.

    python docs/gen_cli_reference.py           # rewrite docs/cli.md
    python docs/gen_cli_reference.py --check   # exit 1 when docs/cli.md is not what it would write

It walks the same click command tree that ``sowctl`` runs (``typer.main.get_command``) and
writes, for every group and command, its usage line, its help text (with its example) and a
table of its arguments and options. It reads the parameters, not the Rich-rendered ``--help``,
so the page does not change with the terminal or the Rich version.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

OUTPUT = Path(__file__).resolve().parent / "cli.md"
HEADER = """# CLI reference

Every command of `sowctl`, with its arguments and options, as `sowctl COMMAND --help` shows
them. This page is generated from the commands by `python docs/gen_cli_reference.py`; do not
edit it by hand. Every command also takes `--help` (`-h`).

The global options (`--db`, `--server`, `--token`...) go before, inside or after the command.
Exit codes: `0` success, `1` a check failed, `2` invalid input or usage, `3` not found,
`4` authentication or permission refused, `5` anything else (see the
[tutorial](tutorial.md#output-and-exit-codes)).
"""


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _code(text: str) -> str:
    return f"`{text}`" if text else ""


def _param_row(param: Any) -> str | None:
    if getattr(param, "hidden", False) or param.name == "help":  # every command has --help
        return None
    if param.param_type_name == "argument":
        name = _code((param.metavar or param.name or "").upper())
        takes = ""
        required = "yes" if param.required else ""
    else:
        name = ", ".join(_code(opt) for opt in [*param.opts, *param.secondary_opts])
        takes = _code(param.metavar or "") if not getattr(param, "is_flag", False) else ""
        required = "yes" if param.required else ""
    help_text = _cell(getattr(param, "help", None) or "")
    return f"| {name} | {takes} | {required} | {help_text} |"


def _help_body(text: str) -> str:
    """The help text as Markdown: paragraphs kept, an ``Example:`` line as a code block."""
    out = []
    for paragraph in (text or "").strip().split("\n\n"):
        lines = [line.strip() for line in paragraph.strip().splitlines() if line.strip() != "\b"]
        if not lines:
            continue
        if lines[0].startswith("Example"):
            first = lines[0].split(":", 1)[1].strip()
            examples = [line for line in [first, *lines[1:]] if line]
            out.append("Example:\n\n```sh\n" + "\n".join(examples) + "\n```")
        else:
            out.append(" ".join(lines))
    return "\n\n".join(out)


def _section(path: list[str], command: Any, ctx: Any) -> str:
    title = " ".join(["sowctl", *path])
    level = "#" * min(2 + max(len(path) - 1, 0), 4)
    usage = " ".join([title, *command.collect_usage_pieces(ctx)])
    parts = [f"{level} `{title}`", f"```text\nUsage: {usage}\n```", _help_body(command.help or "")]
    rows = [row for param in command.get_params(ctx) if (row := _param_row(param))]
    if rows:
        parts.append("| name | takes | required | what it does |\n|---|---|---|---|\n" + "\n".join(rows))
    if _is_group(command):
        names = [name for name in command.list_commands(ctx) if not command.get_command(ctx, name).hidden]
        parts.append("Commands: " + ", ".join(f"`{name}`" for name in names) + ".")
    return "\n\n".join(part for part in parts if part)


def _is_group(command: Any) -> bool:
    return hasattr(command, "list_commands")  # Typer may carry its own copy of click's classes


def _walk(command: Any, path: list[str], parent: Any):
    ctx = command.context_class(command, info_name=path[-1] if path else "sowctl", parent=parent)
    yield path, command, ctx
    if _is_group(command):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if not sub.hidden:
                yield from _walk(sub, [*path, name], ctx)


def render() -> str:
    import typer.main

    from sowctl.cli import whole_app

    root = typer.main.get_command(whole_app())
    sections = [_section(path, command, ctx) for path, command, ctx in _walk(root, [], None)]
    return HEADER + "\n" + "\n\n".join(sections) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail when docs/cli.md is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if not OUTPUT.is_file() or OUTPUT.read_text(encoding="utf-8") != text:
            print("docs/cli.md is stale: run python docs/gen_cli_reference.py", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
