#!/usr/bin/env bash
# Makes localhost/mailsvc-postgres:ci, a stand-in for the postgres:16 image where no registry can be
# pulled: Debian's PostgreSQL (15) with an entrypoint that honours the same contract as the official
# image's: POSTGRES_USER, POSTGRES_PASSWORD and POSTGRES_DB create the superuser and the database on
# first start, in PGDATA=/var/lib/postgresql/data (a volume); listens on 5432 with password auth;
# pg_isready and psql present. Made once per machine (kept while `podman image exists`).
# Used by scripts/container/ci.sh --postgres.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$here/containers.conf}"
IMAGE=localhost/mailsvc-postgres:ci
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

podman image exists "$IMAGE" && { echo "postgres-image: $IMAGE exists" >&2; exit 0; }
t0=$SECONDS
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/entrypoint" <<'EOF'
#!/bin/sh
set -eu
PGDATA=${PGDATA:-/var/lib/postgresql/data}
BIN=$(ls -d /usr/lib/postgresql/*/bin | tail -1)
if [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /run/postgresql
  chown -R postgres:postgres "$PGDATA" /run/postgresql
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
user=${POSTGRES_USER:-postgres}
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  [ -n "${POSTGRES_PASSWORD:-}" ] || { echo "POSTGRES_PASSWORD is required" >&2; exit 1; }
  printf '%s\n' "$POSTGRES_PASSWORD" >/tmp/pw
  "$BIN/initdb" -D "$PGDATA" -U "$user" --pwfile=/tmp/pw -A scram-sha-256 --auth-local=trust >/dev/null
  rm -f /tmp/pw
  echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  db=${POSTGRES_DB:-$user}
  if [ "$db" != postgres ]; then
    "$BIN/pg_ctl" -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
    "$BIN/psql" -v ON_ERROR_STOP=1 -q -U "$user" -d postgres -c "CREATE DATABASE \"$db\""
    "$BIN/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null
  fi
  echo "postgres: initialised $PGDATA (user $user, database $db)"
fi
exec "$BIN/postgres" -D "$PGDATA" "$@"
EOF

mmdebstrap --quiet --variant=minbase --include=postgresql,util-linux \
  --customize-hook='rm -rf "$1"/var/lib/postgresql/*/main "$1"/etc/postgresql/* "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/* "$1"/usr/share/doc/* "$1"/usr/share/man/*' \
  --customize-hook="copy-in $tmp/entrypoint /usr/local/bin" \
  --customize-hook='chmod 755 "$1"/usr/local/bin/entrypoint' \
  bookworm "$tmp/root.tar" "deb $MIRROR bookworm main" >&2
podman import \
  --change 'ENV PGDATA=/var/lib/postgresql/data' \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENTRYPOINT ["/usr/local/bin/entrypoint"]' \
  --change 'EXPOSE 5432' \
  --change 'STOPSIGNAL SIGINT' \
  "$tmp/root.tar" "$IMAGE" >/dev/null
echo "postgres-image: made $IMAGE in $((SECONDS - t0)) s" >&2
