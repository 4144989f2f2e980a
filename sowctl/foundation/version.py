"""sowctl's version, the one place (the wheel's metadata, ``sowctl --version``, OpenAPI, SARIF)."""

VERSION = "0.3.0"
