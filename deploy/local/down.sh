#!/usr/bin/env bash
# Stop what deploy/local/up.sh started in RUN_DIR, and remove RUN_DIR.
#
#     deploy/local/down.sh [--keep] RUN_DIR     # --keep: leave RUN_DIR (its logs) in place
#
# Each program was started in a process group of its own (setsid), named by RUN_DIR/*.pid:
# the group is stopped, so a sowctl instance's worker processes stop with it.
set -uo pipefail

keep=0
if [ "${1:-}" = "--keep" ]; then
  keep=1
  shift
fi
run_dir=${1:?usage: down.sh [--keep] RUN_DIR}
[ -d "$run_dir" ] || { echo "down.sh: $run_dir is not a directory" >&2; exit 2; }

groups=()
# HAProxy first (no new request reaches an instance), PgBouncer last (instances finish).
for file in "$run_dir"/haproxy.pid "$run_dir"/instance-*.pid "$run_dir"/pgbouncer.pid; do
  [ -f "$file" ] || continue
  group=$(cat "$file")
  kill -TERM -- "-$group" 2>/dev/null && groups+=("$group")
done
for _ in $(seq 1 100); do
  alive=0
  for group in "${groups[@]}"; do kill -0 -- "-$group" 2>/dev/null && alive=1; done
  [ "$alive" = 0 ] && break
  sleep 0.1
done
for group in "${groups[@]}"; do kill -KILL -- "-$group" 2>/dev/null; done
rm -f "$run_dir"/*.pid
[ "$keep" = 1 ] || rm -rf "$run_dir"
exit 0
