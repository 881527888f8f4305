#!/usr/bin/env bash
# Container CI: builds the image from the repository's Dockerfile without a registry (podman, on local
# base images made by mmdebstrap: scripts/container/bases.sh) and smoke-tests it: it starts, answers
# /health, /config and /, `mailsvc user create` runs inside it, its keys work, SIGTERM ends it with
# exit 0 and a checkpointed database, and a new container on the same volume keeps the data and the keys.
#
#   scripts/container/ci.sh [options]    the Dockerfile on the minimal local runtime base (what distroless
#                                        cc-debian12 holds), and the smoke test of that image
#   --debian      also build it on a Debian minbase with libssl3 (the stand-in for debian:bookworm-slim;
#                 one more Debian bootstrap the first time) and report its size
#   --postgres    run the smoke test on PostgreSQL (a local image standing in for postgres:16) beside the
#                 service on one network, as compose.yaml's postgres profile does, with MAILSVC_DATABASE_URL
#                 pointing at it; checks that the data is in PostgreSQL
#   --keep        leave the containers, volumes and network for a look afterwards
#
# Runs as root on a clean Debian machine: installs podman, runc, mmdebstrap and curl with apt-get when
# missing. Base images are made once per machine and reused (podman image exists). The build's layers
# are cached by podman too: npm ci reruns only when package-lock.json changes.
# Prints "container: ..." lines, the sizes and times, and ends with "container: N passed, N failed";
# exits 0 when every check passed.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
here=$root/scripts/container
export CONTAINERS_CONF="$here/containers.conf"

postgres=0
keep=0
debian=0
for a in "$@"; do
  case $a in
    --postgres) postgres=1 ;;
    --debian) debian=1 ;;
    --keep) keep=1 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "container: unknown option $a" >&2; exit 2 ;;
  esac
done

t_start=$SECONDS
passed=0
failed=0
ok() { echo "container: ok   $*"; passed=$((passed + 1)); }
bad() { echo "container: FAIL $*"; failed=$((failed + 1)); }
finish() {
  echo "container: $passed passed, $failed failed ($((SECONDS - t_start)) s)"
  [ "$failed" = 0 ] && exit 0 || exit 1
}
mkdir -p .tmp
logdir=$(mktemp -d "$root/.tmp/container-XXXXXX")

# --- tools -------------------------------------------------------------------------------------------
need=()
command -v podman >/dev/null || need+=(podman)
command -v runc >/dev/null || [ -x /usr/sbin/runc ] || need+=(runc)
command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
command -v curl >/dev/null || need+=(curl)
dpkg -s netavark >/dev/null 2>&1 || need+=(netavark)
dpkg -s aardvark-dns >/dev/null 2>&1 || need+=(aardvark-dns)
dpkg -s uidmap >/dev/null 2>&1 || need+=(uidmap)
if [ ${#need[@]} -gt 0 ]; then
  t0=$SECONDS
  if { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "${need[@]}" ca-certificates; } >"$logdir/apt.log" 2>&1; then
    echo "container: installed ${need[*]} in $((SECONDS - t0)) s"
  else
    tail -20 "$logdir/apt.log"; bad "apt-get install ${need[*]}"; finish
  fi
fi

# --- base images (once per machine) ------------------------------------------------------------------
t0=$SECONDS
bases=(build min)
[ $debian = 1 ] && bases+=(runtime)
if "$here/bases.sh" "${bases[@]}" 2>"$logdir/bases.log"; then
  grep -h "made" "$logdir/bases.log" | sed 's/^/container: /'
  echo "container: base images ready in $((SECONDS - t0)) s"
else
  cat "$logdir/bases.log"; bad "local base images"; finish
fi

# --- the Dockerfile ----------------------------------------------------------------------------------
IMAGE=localhost/mailsvc:ci-debian
MIN_IMAGE=localhost/mailsvc:ci
BUILD_STAGE=localhost/mailsvc-build:ci
build() { # $1 tag, $2 runtime base, $3.. more podman build options
  local tag=$1 runtime=$2; shift 2
  local old; old=$(podman image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)
  local t0=$SECONDS log="$logdir/build-${tag//[:\/]/_}.log"
  if podman build --format docker --build-arg BUILD_IMAGE=localhost/mailsvc-build-base:bookworm \
      --build-arg "RUNTIME_IMAGE=$runtime" "$@" -t "$tag" -f Dockerfile . >"$log" 2>&1; then
    local size; size=$(podman image inspect --format '{{.Size}}' "$tag")
    ok "podman build -t $tag$([ "$tag" = "$BUILD_STAGE" ] && echo " --target build" || echo " (RUNTIME_IMAGE=$runtime)"): $((SECONDS - t0)) s, $((size / 1000000)) MB"
    # The image this build replaced is no longer tagged: remove it (with its own layers) rather than let
    # one pile up per run. The build stage is tagged too, for the same reason.
    local new; new=$(podman image inspect --format '{{.Id}}' "$tag")
    [ -n "$old" ] && [ "$old" != "$new" ] && podman rmi "$old" >/dev/null 2>&1
    return 0
  fi
  tail -40 "$log"; bad "podman build -t $tag"
  return 1
}
# The build stage alone first (npm ci, npm run build): its layers are then reused by both images below.
build "$BUILD_STAGE" localhost/mailsvc-min-base:bookworm --target build || finish
if [ $debian = 1 ]; then
  build "$IMAGE" localhost/mailsvc-runtime-base:bookworm || finish
fi
build "$MIN_IMAGE" localhost/mailsvc-min-base:bookworm || finish

# --- smoke test --------------------------------------------------------------------------------------
id=$$-$RANDOM
volume=mailsvc-ci-$id
containers=()
network=""
cleanup() {
  [ $keep = 1 ] && { echo "container: kept ${containers[*]} $volume $network"; return; }
  for c in "${containers[@]}"; do podman rm -f -v -t 0 "$c" >/dev/null 2>&1; done
  [ "$failed" = 0 ] && rm -rf "$logdir"
  podman volume rm -f "$volume" >/dev/null 2>&1
  [ -n "$network" ] && podman network rm -f "$network" >/dev/null 2>&1
  [ $postgres = 1 ] && podman volume rm -f "$volume-pg" >/dev/null 2>&1
}
trap cleanup EXIT

# Host ports nothing listens on (a random one collided once).
free_port() {
  local p
  for _ in $(seq 1 50); do
    p=$(( 20000 + RANDOM % 20000 ))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || break
  done
  echo "$p"
}
port=$(free_port)
smtp_port=$(free_port)
base=http://127.0.0.1:$port
podman volume create "$volume" >/dev/null

db_args=()
if [ $postgres = 1 ]; then
  "$here/postgres-image.sh" 2>"$logdir/pg-image.log" || { cat "$logdir/pg-image.log"; bad "local PostgreSQL image"; finish; }
  network=mailsvc-ci-$id
  podman network create "$network" >/dev/null
  containers+=("mailsvc-ci-pg-$id")
  podman volume create "$volume-pg" >/dev/null
  # As compose.yaml's postgres service: user, password and database "mailsvc", reached as "postgres".
  podman run -d --name "mailsvc-ci-pg-$id" --network "$network" --network-alias postgres \
    -e POSTGRES_USER=mailsvc -e POSTGRES_PASSWORD=mailsvc -e POSTGRES_DB=mailsvc \
    -v "$volume-pg:/var/lib/postgresql/data" localhost/mailsvc-postgres:ci >/dev/null 2>>"$logdir/podman.log"
  up=0
  for _ in $(seq 1 150); do
    podman exec "mailsvc-ci-pg-$id" pg_isready -q -U mailsvc -d mailsvc 2>/dev/null && { up=1; break; }
    sleep 0.2
  done
  [ $up = 1 ] && ok "PostgreSQL is up" || { podman logs "mailsvc-ci-pg-$id" | tail -20; bad "PostgreSQL did not start"; finish; }
  db_args=(--network "$network" -e MAILSVC_DATABASE_URL=postgres://mailsvc:mailsvc@postgres:5432/mailsvc)
fi

# Starts a container of $MIN_IMAGE on the volume; waits for /health. $1 name
start() {
  containers+=("$1")
  local t0; t0=$(date +%s%3N)
  # (podman's stderr to the log: without systemd it complains that it cannot schedule the health check.)
  # As compose.yaml runs it: inbound SMTP on 2525 inside (a non-root user), published elsewhere.
  podman run -d --name "$1" -p "127.0.0.1:$port:3000" -p "127.0.0.1:$smtp_port:2525" -v "$volume:/data" "${db_args[@]}" \
    -e MAILSVC_HOSTNAME=mail.example.test -e "MAILSVC_PUBLIC_URL=$base" -e MAILSVC_INBOUND_SMTP_PORT=2525 "$MIN_IMAGE" >/dev/null 2>>"$logdir/podman.log" \
    || { cat "$logdir/podman.log"; bad "podman run $1"; return 1; }
  for _ in $(seq 1 300); do
    if [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/health" 2>/dev/null)" = 200 ]; then
      ok "$1 answered /health $(( $(date +%s%3N) - t0 )) ms after podman run"
      return 0
    fi
    podman container exists "$1" && [ "$(podman inspect --format '{{.State.Running}}' "$1")" = true ] || break
    sleep 0.1
  done
  podman logs "$1" 2>&1 | tail -30; bad "$1 did not answer /health"
  return 1
}

# SIGTERM, then the exit status and how long it took. $1 name
stop() {
  local t0; t0=$(date +%s%3N)
  podman kill --signal TERM "$1" >/dev/null
  local code; code=$(timeout 30 podman wait "$1" 2>/dev/null)
  local ms=$(( $(date +%s%3N) - t0 ))
  if [ "$code" = 0 ] && podman logs "$1" 2>&1 | grep -q '"shutting down"'; then
    ok "$1 ended on SIGTERM with exit 0 in $ms ms"
  else
    podman logs "$1" 2>&1 | tail -20; bad "$1 after SIGTERM: exit status \"$code\" after $ms ms"
  fi
}

run1=mailsvc-ci-$id-1
run2=mailsvc-ci-$id-2
start "$run1" || finish

body=$(curl -fsS "$base/config") && echo "$body" | grep -q '"version"' && ok "/config: $body" || bad "/config: $body"
code=$(curl -s -o "$logdir/index.html" -w '%{http_code}' "$base/")
[ "$code" = 200 ] && grep -qi '<html' "$logdir/index.html" && ok "/ answers the dashboard ($(wc -c <"$logdir/index.html") bytes)" || bad "/ answered $code"

[ "$(podman inspect --format '{{.Config.User}}' "$run1")" = 65532:65532 ] && ok "runs as 65532:65532, not root" || bad "runs as $(podman inspect --format '{{.Config.User}}' "$run1")"
podman healthcheck run "$run1" >/dev/null 2>&1 && ok "the image's HEALTHCHECK (mailsvc health) passes" || bad "podman healthcheck run"
sc=$(podman exec "$run1" mailsvc selfcheck 2>&1)
echo "$sc" | grep -q '"builtIn":"worker".*"dkimOpenssl":true' && ok "selfcheck: message worker and OpenSSL 3 (libcrypto) load: $sc" || bad "selfcheck: $sc"

email=ci-$id@example.com
created=$(podman exec "$run1" mailsvc user create --email "$email" --password password123 --project CI 2>&1)
sk=$(echo "$created" | grep -o '"secret": *"sk_[^"]*"' | grep -o 'sk_[^"]*')
[ -n "$sk" ] && ok "mailsvc user create inside the container printed a project and its keys" || bad "mailsvc user create: $created"
key1=$(curl -s -H "Authorization: Bearer $sk" "$base/v1/key")
echo "$key1" | grep -q '"success":true' && ok "the secret key works: $key1" || bad "/v1/key with the new secret key: $key1"
dom=$(curl -s -H "Authorization: Bearer $sk" -H 'content-type: application/json' -d '{"domain":"ci.example.test"}' "$base/domains")
dom_id=$(echo "$dom" | grep -o '"id": *"[^"]*"' | head -1 | grep -o '"[^"]*"$' | tr -d '"')
dkim1=$(echo "$dom" | grep -o 'v=DKIM1[^"]*' | head -1)
[ -n "$dom_id" ] && [ -n "$dkim1" ] && ok "a domain with its DKIM key: $dom_id" || bad "POST /domains: $dom"
cookie=$(curl -s -D - -o /dev/null -H 'content-type: application/json' -d "{\"email\":\"$email\",\"password\":\"password123\"}" "$base/auth/login" | grep -i '^set-cookie:' | head -1 | sed 's/^[^:]*: *//; s/;.*//' | tr -d '\r')
[ "$(curl -s -o /dev/null -w '%{http_code}' -H "cookie: $cookie" "$base/users/@me")" = 200 ] && ok "a dashboard session (login)" || bad "login: no working session cookie"

banner=$(timeout 5 bash -c "exec 3<>/dev/tcp/127.0.0.1/$smtp_port; head -1 <&3" 2>&1 | tr -d '\r')
[[ "$banner" == 220* ]] && ok "inbound SMTP answers on the published port: $banner" || bad "inbound SMTP: \"$banner\""
if [ $postgres = 0 ]; then
  hot=$(podman exec "$run1" mailsvc backup /data/backup.db 2>&1) && ok "hot backup inside the container: $hot" || bad "mailsvc backup: $hot"
fi

stop "$run1"
if [ $postgres = 0 ]; then
  mp=$(podman volume inspect --format '{{.Mountpoint}}' "$volume")
  owner=$(stat -c %u:%g "$mp/mailsvc.db" 2>/dev/null)
  wal=$(stat -c %s "$mp/mailsvc.db-wal" 2>/dev/null || echo 0)
  [ "$owner" = 65532:65532 ] && [ "$wal" = 0 ] && ok "the volume holds mailsvc.db ($(stat -c %s "$mp/mailsvc.db") bytes, owned by 65532), WAL checkpointed (empty or absent)" \
    || bad "after the stop: mailsvc.db owner \"$owner\", WAL $wal bytes"
  # The README's cold backup: the file copied out of the stopped container is the same database.
  podman cp "$run1:/data/mailsvc.db" "$logdir/cold.db" 2>>"$logdir/podman.log" && cmp -s "$logdir/cold.db" "$mp/mailsvc.db" \
    && ok "cold backup: podman cp of /data/mailsvc.db from the stopped container" || bad "podman cp of /data/mailsvc.db"
fi

start "$run2" || finish
key2=$(curl -s -H "Authorization: Bearer $sk" "$base/v1/key")
[ "$key2" = "$key1" ] && ok "a new container on the volume: the secret key still works" || bad "after the restart /v1/key: $key2"
dkim2=$(curl -s -H "Authorization: Bearer $sk" "$base/domains/$dom_id" | grep -o 'v=DKIM1[^"]*' | head -1)
[ -n "$dkim2" ] && [ "$dkim2" = "$dkim1" ] && ok "the domain and its DKIM key are kept" || bad "after the restart the DKIM record is \"$dkim2\""
[ "$(curl -s -o /dev/null -w '%{http_code}' -H "cookie: $cookie" "$base/users/@me")" = 200 ] && ok "the session from before the restart is still valid (session secret kept)" || bad "the session cookie no longer works after the restart"
again=$(podman exec "$run2" mailsvc user create --email "$email" --password password123 2>&1) \
  && bad "user create of an existing user succeeded: $again" || ok "the user is kept (a second user create with that email is refused)"
stop "$run2"

if [ $postgres = 1 ]; then
  tables=$(podman exec "mailsvc-ci-pg-$id" psql -U mailsvc -d mailsvc -tAc "select count(*) from information_schema.tables where table_schema = 'public'" 2>&1)
  users=$(podman exec "mailsvc-ci-pg-$id" psql -U mailsvc -d mailsvc -tAc "select count(*) from users" 2>&1)
  [ "${tables:-0}" -gt 0 ] 2>/dev/null && [ "$users" = 1 ] && ok "the data is in PostgreSQL ($tables tables, $users user)" \
    || bad "PostgreSQL holds no mailsvc data (tables: $tables; users: $users): the binary did not use MAILSVC_DATABASE_URL"
fi

echo "container: sizes: $(podman images --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -E 'mailsvc(-[a-z]+-base)?:' | tr '\n' ';' | sed 's/;$//; s/;/; /g')"
finish
