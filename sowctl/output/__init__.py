"""What the CLI prints, shaped once: safe text, table layout, --jq/--columns, pager, dates.

``sowctl.output.render`` is the commands' entry point; these modules are its parts. Nothing
here imports Rich, jq or subprocess at module level, so ``sowctl --help`` stays fast.
"""
