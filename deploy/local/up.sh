#!/usr/bin/env bash
# Several `sowctl serve` instances behind HAProxy, on one PostgreSQL through PgBouncer
# (transaction pooling), all on loopback, from Debian's packages:
#
#     apt-get install -y haproxy pgbouncer
#     deploy/local/up.sh [RUN_DIR]        # prints the URL to use, and RUN_DIR
#     deploy/local/down.sh RUN_DIR        # stops everything and removes RUN_DIR
#
# Everything lives in RUN_DIR (a new temporary directory by default): configuration, logs,
# process ids. No system service is started, stopped or reconfigured.
#
# Settings (environment):
#   SOWCTL_DEPLOY_DATABASE_URL  the PostgreSQL database to use
#                               (default postgresql://postgres@127.0.0.1:5432/postgres)
#   SOWCTL_DEPLOY_INSTANCES     how many sowctl instances (default 2)
#   SOWCTL_DEPLOY_PORT          HAProxy's port (default: a free one)
#   SOWCTL_DEPLOY_WORKERS       worker processes per instance (default 1)
#   SOWCTL                      the sowctl program (default: sowctl on PATH)
#   SOWCTL_PG_PREPARE           prepared reads (default off here: PgBouncer 1.18 in
#                               transaction mode keeps no prepared statement of a client)
#
# RUN_DIR/env holds what a script needs afterwards (shell syntax): SOWCTL_URL (HAProxy),
# SOWCTL_POOLED_URL (the database through PgBouncer), SOWCTL_INSTANCE_PORTS, and each
# instance's process group id in RUN_DIR/instance-N.pid.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
PATH="$PATH:/usr/sbin:/sbin"  # where Debian puts haproxy and pgbouncer
database_url=${SOWCTL_DEPLOY_DATABASE_URL:-postgresql://postgres@127.0.0.1:5432/postgres}
instances=${SOWCTL_DEPLOY_INSTANCES:-2}
workers=${SOWCTL_DEPLOY_WORKERS:-1}
sowctl=${SOWCTL:-sowctl}
export SOWCTL_PG_PREPARE=${SOWCTL_PG_PREPARE:-off}

for program in haproxy pgbouncer python3; do
  command -v "$program" >/dev/null || { echo "up.sh: $program is not installed" >&2; exit 2; }
done
command -v "$sowctl" >/dev/null || { echo "up.sh: $sowctl is not installed" >&2; exit 2; }

run_dir=${1:-$(mktemp -d -t sowctl-deploy.XXXXXX)}
mkdir -p "$run_dir"
run_dir=$(cd "$run_dir" && pwd)
# PgBouncer refuses to run as root: it then runs as nobody, who must read its files here.
chmod 755 "$run_dir"

# If anything below fails, what was started is stopped again.
trap 'status=$?; [ "$status" = 0 ] || "$here/down.sh" --keep "$run_dir" >/dev/null 2>&1; exit "$status"' EXIT

free_ports() {  # free_ports N: N free loopback TCP ports
  python3 - "$1" <<'EOF'
import socket, sys
sockets = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in sockets:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in sockets))
EOF
}

# The upstream database, in parts, for PgBouncer's [databases] line.
read -r db_host db_port db_name db_user db_password < <(python3 - "$database_url" <<'EOF'
import sys
from urllib.parse import unquote, urlsplit
url = urlsplit(sys.argv[1])
parts = [url.hostname or "127.0.0.1", str(url.port or 5432), unquote(url.path.lstrip("/")) or "postgres",
         unquote(url.username or "postgres"), unquote(url.password or "")]
print(" ".join(p if p else "-" for p in parts))
EOF
)
[ "$db_password" = "-" ] && db_password=""

read -r -a ports <<<"$(free_ports $((instances + 2)))"
bouncer_port=${ports[0]}
front_port=${SOWCTL_DEPLOY_PORT:-${ports[1]}}
instance_ports=("${ports[@]:2}")

# --- PgBouncer: transaction pooling, loopback only ---------------------------------------
password_part=""
[ -n "$db_password" ] && password_part=" password=$db_password"
cat >"$run_dir/pgbouncer.ini" <<EOF
[databases]
$db_name = host=$db_host port=$db_port dbname=$db_name user=$db_user$password_part

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $bouncer_port
unix_socket_dir =
; Loopback only, and the real credentials are on the [databases] line above. On a shared
; host, use auth_type = scram-sha-256 with an auth_file or auth_query instead.
auth_type = trust
auth_file = $run_dir/userlist.txt
pool_mode = transaction
default_pool_size = 10
max_client_conn = 200
EOF
printf '"%s" ""\n' "$db_user" >"$run_dir/userlist.txt"
chmod 644 "$run_dir/pgbouncer.ini" "$run_dir/userlist.txt"
as_user=()
[ "$(id -u)" = 0 ] && as_user=(-u nobody)
setsid pgbouncer "${as_user[@]}" "$run_dir/pgbouncer.ini" >"$run_dir/pgbouncer.log" 2>&1 &
echo $! >"$run_dir/pgbouncer.pid"

pooled_url="postgresql://$db_user@127.0.0.1:$bouncer_port/$db_name"
for _ in $(seq 1 50); do
  python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $bouncer_port), 0.2)" 2>/dev/null && break
  sleep 0.1
done

# --- sowctl instances: the first migrates the database, the others find it current -------
start_instance() {  # start_instance N PORT
  setsid "$sowctl" serve --db "$pooled_url" --host 127.0.0.1 --port "$2" --workers "$workers" \
    --log-format json >"$run_dir/instance-$1.log" 2>&1 &
  echo $! >"$run_dir/instance-$1.pid"
}
for n in $(seq 1 "$instances"); do
  start_instance "$n" "${instance_ports[$((n - 1))]}"
  # The first alone until ready, so that one instance applies the migrations.
  if [ "$n" = 1 ] || [ "$n" = "$instances" ]; then
    for m in $(seq 1 "$n"); do
      "$sowctl" wait "http://127.0.0.1:${instance_ports[$((m - 1))]}" --timeout 60 2>/dev/null ||
        { echo "up.sh: instance $m is not ready (its log: $run_dir/instance-$m.log)" >&2; exit 1; }
    done
  fi
done

# --- HAProxy: health checks on /readyz, failed connections retried on another instance ----
{
  cat <<EOF
global
    log stderr format short local0 info
    maxconn 1000

defaults
    mode http
    log global
    option httplog
    timeout connect 2s
    timeout client 30s
    timeout server 30s
    timeout queue 10s
    # A connection refused (an instance gone) is retried, on another instance: the request
    # was never sent, so this is safe for a POST too. A request an instance was answering
    # when it died is not retried: it may have been applied.
    retries 3
    retry-on conn-failure
    option redispatch 1

frontend sowctl
    bind 127.0.0.1:$front_port
    default_backend sowctl

backend sowctl
    balance roundrobin
    option httpchk GET /readyz
    http-check expect status 200
    default-server inter 500ms fall 2 rise 2
EOF
  for n in $(seq 1 "$instances"); do
    echo "    server sowctl$n 127.0.0.1:${instance_ports[$((n - 1))]} check"
  done
} >"$run_dir/haproxy.cfg"
haproxy -c -q -f "$run_dir/haproxy.cfg"
setsid haproxy -db -f "$run_dir/haproxy.cfg" >"$run_dir/haproxy.log" 2>&1 &
echo $! >"$run_dir/haproxy.pid"

url="http://127.0.0.1:$front_port"
"$sowctl" wait "$url" --timeout 60 2>/dev/null ||
  { echo "up.sh: HAProxy does not answer (its log: $run_dir/haproxy.log)" >&2; exit 1; }

cat >"$run_dir/env" <<EOF
SOWCTL_URL=$url
SOWCTL_POOLED_URL=$pooled_url
SOWCTL_INSTANCE_PORTS="${instance_ports[*]}"
SOWCTL_RUN_DIR=$run_dir
EOF
echo "RUN_DIR=$run_dir"
echo "URL=$url"
