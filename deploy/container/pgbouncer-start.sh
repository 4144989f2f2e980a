#!/bin/sh
# Write PgBouncer's configuration from the environment, then run it in the foreground.
#   DB_HOST, DB_PORT, DB_NAME, DB_USER, DB_PASSWORD: the PostgreSQL database behind it; its
#   clients log in as DB_USER with DB_PASSWORD too (SCRAM).
set -eu
config=${PGBOUNCER_CONFIG_DIR:-/tmp/pgbouncer}
mkdir -p "$config"
umask 077
cat >"$config/pgbouncer.ini" <<INI
[databases]
$DB_NAME = host=$DB_HOST port=${DB_PORT:-5432} dbname=$DB_NAME user=$DB_USER

[pgbouncer]
listen_addr = 0.0.0.0
listen_port = 6432
unix_socket_dir =
auth_type = scram-sha-256
auth_file = $config/userlist.txt
pool_mode = transaction
default_pool_size = 20
max_client_conn = 500
INI
printf '"%s" "%s"\n' "$DB_USER" "$DB_PASSWORD" >"$config/userlist.txt"
exec pgbouncer "$config/pgbouncer.ini"
