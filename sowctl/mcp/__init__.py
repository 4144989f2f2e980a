"""``sowctl mcp``: the operation registry's calls as Model Context Protocol tools."""
