"""The root command's class: it lists every command from the registry, and builds one only
when it runs.

Typer builds the parameters of every command of every group before it runs one of them,
and building a group means importing its module. The root is therefore made with a stand-in
for each group and top-level command (same name, same help: what ``sowctl --help`` and shell
completion list), and ``LazyGroup`` swaps the real command in when click resolves its name to
run it (``resolve_command``, also what shell completion walks through).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from typer.core import TyperGroup

from sowctl.output.params import plain_metavars

if TYPE_CHECKING:  # Typer carries its own copy of click: its classes are not the click package's
    from typer import _click as click


class LazyGroup(TyperGroup):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.loaders: dict[str, Callable[[], click.Command]] = {}
        plain_metavars(self)

    def defer(self, stand_in: click.Command, load: Callable[[], click.Command]) -> None:
        """List ``stand_in`` (a name and a help, no parameters) until its name is resolved to
        run it; ``load`` then builds the real command."""
        assert stand_in.name is not None
        self.commands[stand_in.name] = stand_in
        self.loaders[stand_in.name] = load

    def load(self, name: str) -> click.Command | None:
        """The command ``name``, built now if it was deferred (None: no such command)."""
        load = self.loaders.pop(name, None)
        if load is not None:
            self.commands[name] = load()
        command = self.commands.get(name)
        if command is not None:
            plain_metavars(command)
        return command

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            plain_metavars(command)
        return command

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        if args:
            self.load(args[0])
        return super().resolve_command(ctx, args)
