#!/bin/sh
# The container's health check: GET /readyz on the address serve.sh listens on
# (SOWCTL_HOST:SOWCTL_PORT; a wildcard host is asked on loopback). Exit 0 when ready, 1 when
# not: the two codes a container engine's health check knows.
set -u
host=${SOWCTL_HOST:-0.0.0.0}
case $host in
  0.0.0.0 | "") host=127.0.0.1 ;;
  :: | "[::]") host="[::1]" ;;
  *:*) case $host in \[*) ;; *) host="[$host]" ;; esac ;;
esac
sowctl wait "http://$host:${SOWCTL_PORT:-8000}" --timeout 3 >/dev/null 2>&1 || exit 1
