#!/bin/sh
# The container's command: sowctl serve on SOWCTL_HOST:SOWCTL_PORT, the address the health
# check (healthcheck.sh) asks. Further arguments go to sowctl serve.
set -eu
exec sowctl serve --host "${SOWCTL_HOST:-0.0.0.0}" --port "${SOWCTL_PORT:-8000}" "$@"
