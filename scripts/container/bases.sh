#!/usr/bin/env bash
# Makes the local base images the Dockerfile is built on where no registry can be pulled
# (Debian's apt repositories are enough). Each is made once per machine: an image that already
# exists is kept (delete it with `podman rmi` to remake it).
#
#   localhost/mailsvc-build-base:bookworm    Debian minbase + nodejs, npm 10 from the npm registry
#                                            (+ this machine's CA bundle)
#                                            stands in for node:22-bookworm-slim (BUILD_IMAGE)
#   localhost/mailsvc-runtime-base:bookworm  Debian minbase + ca-certificates + libssl3
#                                            stands in for debian:bookworm-slim (RUNTIME_IMAGE)
#   localhost/mailsvc-min-base:bookworm      only what the binary needs: glibc, libgcc_s, libstdc++,
#                                            libcrypto 3, CA certificates, /tmp, a nonroot user
#                                            stands in for gcr.io/distroless/cc-debian12 (RUNTIME_IMAGE);
#                                            its files are taken from the build base
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
NPM_VERSION=10

log() { echo "bases: $*" >&2; }

# mmdebstrap-made root file system -> local image. $1 image, $2 packages, $3.. extra --change lines;
# EXTRA_HOOKS: more mmdebstrap hooks.
EXTRA_HOOKS=()
make_debian() {
  local image=$1 include=$2; shift 2
  local tmp; tmp=$(mktemp -d)
  local t0=$SECONDS
  local hooks=("${EXTRA_HOOKS[@]}" --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/*')
  # As debian:*-slim does: no documentation, manual pages or translations.
  local slim=()
  local d
  for d in doc man info locale lintian; do slim+=(--dpkgopt="path-exclude=/usr/share/$d/*"); done
  slim+=(--dpkgopt='path-include=/usr/share/doc/*/copyright')
  mmdebstrap --quiet --variant=minbase --dpkgopt=force-unsafe-io "${slim[@]}" --include="$include" "${hooks[@]}" "$SUITE" "$tmp/root.tar" "deb $MIRROR $SUITE main" >&2
  podman import "$@" "$tmp/root.tar" "$image" >/dev/null
  rm -rf "$tmp"
  log "made $image in $((SECONDS - t0)) s"
}

targets=("$@"); [ ${#targets[@]} = 0 ] && targets=(build runtime min)

for t in "${targets[@]}"; do
  case $t in
    build)
      podman image exists "$BUILD_BASE" && { log "$BUILD_BASE exists"; continue; }
      [ -f "$HOST_CA" ] && EXTRA_HOOKS+=(--customize-hook='mkdir -p "$1/usr/local/share/ca-certificates"' \
        --customize-hook="copy-in $HOST_CA /usr/local/share/ca-certificates/")
      # npm from the npm registry (as the node images carry it): Debian's npm package drags in ~400 node-*
      # packages and made this image take minutes. npm 10 runs on Debian's Node.js 18.
      packages=ca-certificates,nodejs
      npm_dir=$(mktemp -d)
      if command -v npm >/dev/null && (cd "$npm_dir" && npm pack --silent "npm@$NPM_VERSION" >/dev/null 2>&1) && [ -f "$(ls "$npm_dir"/npm-*.tgz)" ]; then
        EXTRA_HOOKS+=(--customize-hook="copy-in $(ls "$npm_dir"/npm-*.tgz) /tmp" \
          --customize-hook='chroot "$1" sh -c "mkdir -p /usr/local/lib/node_modules/npm && tar -xzf /tmp/npm-*.tgz -C /usr/local/lib/node_modules/npm --strip-components=1 && rm /tmp/npm-*.tgz && ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx"')
      else
        packages=$packages,npm
      fi
      make_debian "$BUILD_BASE" "$packages" \
        --change 'ENV NODE_EXTRA_CA_CERTS=/usr/local/share/ca-certificates/ca-certificates.crt' \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'CMD ["/bin/bash"]'
      rm -rf "$npm_dir"; EXTRA_HOOKS=()
      ;;
    runtime)
      podman image exists "$RUNTIME_BASE" && { log "$RUNTIME_BASE exists"; continue; }
      make_debian "$RUNTIME_BASE" ca-certificates,libssl3 \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'CMD ["/bin/bash"]'
      ;;
    min)
      podman image exists "$MIN_BASE" && { log "$MIN_BASE exists"; continue; }
      # Its files come from the build base (Node.js needs the same glibc, libstdc++, libssl3 and CA
      # certificates): no second Debian bootstrap.
      "$0" build
      t0=$SECONDS
      podman build --quiet --layers=false --format docker --build-arg "FROM_IMAGE=$BUILD_BASE" \
        -f "$here/min-base.Containerfile" -t "$MIN_BASE" "$here" >/dev/null
      log "made $MIN_BASE in $((SECONDS - t0)) s"
      ;;
    *) echo "unknown base \"$t\" (build, runtime or min)" >&2; exit 2 ;;
  esac
done
