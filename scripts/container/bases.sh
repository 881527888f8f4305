#!/usr/bin/env bash
# Makes the local base images the Dockerfile is built on where no registry can be pulled
# (Debian's apt repositories are enough). Each is made once per machine: an image that already
# exists is kept (delete it with `podman rmi` to remake it).
#
#   localhost/mailsvc-build-base:bookworm    Debian minbase + nodejs + npm (+ this machine's CA bundle)
#                                            stands in for node:22-bookworm-slim (BUILD_IMAGE)
#   localhost/mailsvc-runtime-base:bookworm  Debian minbase + ca-certificates + libssl3
#                                            stands in for debian:bookworm-slim (RUNTIME_IMAGE)
#   localhost/mailsvc-min-base:bookworm      only what the binary needs: glibc, libgcc_s, libstdc++,
#                                            libcrypto 3, CA certificates, /tmp, a nonroot user
#                                            stands in for gcr.io/distroless/cc-debian12 (RUNTIME_IMAGE)
#
# Usage: scripts/container/bases.sh [build|runtime|min]...   (default: all three)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$here/containers.conf}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SUITE=bookworm
BUILD_BASE=localhost/mailsvc-build-base:$SUITE
RUNTIME_BASE=localhost/mailsvc-runtime-base:$SUITE
MIN_BASE=localhost/mailsvc-min-base:$SUITE
# The machine's CA bundle goes into the build image: npm ci inside the build reaches the registry
# through whatever TLS interception this network does.
HOST_CA=/etc/ssl/certs/ca-certificates.crt

log() { echo "bases: $*" >&2; }

# debootstrap-made root file system -> local image. $1 image, $2 packages, $3.. extra --change lines
make_debian() {
  local image=$1 include=$2; shift 2
  local tmp; tmp=$(mktemp -d)
  local t0=$SECONDS
  local hooks=(--customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/* "$1"/usr/share/doc/* "$1"/usr/share/man/* "$1"/usr/share/info/*')
  if [ -f "$HOST_CA" ] && [ "$image" = "$BUILD_BASE" ]; then
    hooks+=(--customize-hook="mkdir -p \"\$1/usr/local/share/ca-certificates\"" --customize-hook="copy-in $HOST_CA /usr/local/share/ca-certificates/")
  fi
  mmdebstrap --quiet --variant=minbase --include="$include" "${hooks[@]}" "$SUITE" "$tmp/root.tar" "deb $MIRROR $SUITE main" >&2
  podman import "$@" "$tmp/root.tar" "$image" >/dev/null
  rm -rf "$tmp"
  log "made $image in $((SECONDS - t0)) s"
}

targets=("$@"); [ ${#targets[@]} = 0 ] && targets=(build runtime min)

for t in "${targets[@]}"; do
  case $t in
    build)
      podman image exists "$BUILD_BASE" && { log "$BUILD_BASE exists"; continue; }
      make_debian "$BUILD_BASE" ca-certificates,nodejs,npm \
        --change 'ENV NODE_EXTRA_CA_CERTS=/usr/local/share/ca-certificates/ca-certificates.crt' \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'CMD ["/bin/bash"]'
      ;;
    runtime)
      podman image exists "$RUNTIME_BASE" && { log "$RUNTIME_BASE exists"; continue; }
      make_debian "$RUNTIME_BASE" ca-certificates,libssl3 \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'CMD ["/bin/bash"]'
      ;;
    min)
      podman image exists "$MIN_BASE" && { log "$MIN_BASE exists"; continue; }
      "$0" runtime
      t0=$SECONDS
      podman build --quiet --layers=false --format docker --build-arg "FROM_IMAGE=$RUNTIME_BASE" \
        -f "$here/min-base.Containerfile" -t "$MIN_BASE" "$here" >/dev/null
      log "made $MIN_BASE in $((SECONDS - t0)) s"
      ;;
    *) echo "unknown base \"$t\" (build, runtime or min)" >&2; exit 2 ;;
  esac
done
