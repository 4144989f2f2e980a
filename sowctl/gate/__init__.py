"""The CI gate's client-side rules (``sowctl chain check``): which risks a chain report holds,
the verdict against ``--fail-on``, baselines and accepted risks, and the report formats. It
runs on what a backend returned, locally or from a server, never on the database."""
