#!/usr/bin/env bash
# Scores one message of each kind produced by the real engine with SpamAssassin (Debian package,
# local rules only: no network tests, no Bayes), with a fully qualified MAILSVC_HOSTNAME and an
# https public URL, as an operator following the README would run it, and checks its DKIM
# signatures with two verifiers (mailauth, Perl's Mail::DKIM). Kinds: transactional, attachment,
# a MARKETING template via /v1/send, campaigns (default tracking and ENABLED), workflow emails,
# account emails (scripts/spamcheck/messages.ts). Prints each score and fails (exit 1) when one
# reaches the bar (default 1.0) or a signature does not pass with both verifiers.
#
#   scripts/spamcheck.sh [out-dir]        (SPAMCHECK_MAX=1.0, SPAMCHECK_HOSTNAME, SPAMCHECK_PUBLIC_URL)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-$(mktemp -d -t mailsvc-spamcheck-XXXXXX)}"
MAX="${SPAMCHECK_MAX:-1.0}"
export PATH="$PWD/node_modules/.bin:$PATH"

if ! command -v spamassassin >/dev/null 2>&1; then
  echo "installing SpamAssassin (apt-get)..." >&2
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq >/dev/null
  # --no-install-recommends: sa-compile (rule compilation, minutes of CPU) is not needed for scoring.
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends spamassassin >/dev/null
fi
# Debian ships the rules in the package; sa-update (network) is not needed for local tests.
spamassassin -V | head -1 >&2

bun scripts/spamcheck/messages.ts "$OUT" >/dev/null

fail=0
printf '%-28s %6s  %-10s %s\n' "kind" "score" "dkim" "rules"
for f in "$OUT"/*.eml; do
  kind="$(basename "$f" .eml)"
  report="$(spamassassin -L -t < "$f" 2>/dev/null)"
  status="$(printf '%s\n' "$report" | awk '/^X-Spam-Status:/{p=1} p&&/^[^ \t]/&&!/^X-Spam-Status:/{exit} p' | tr '\n\t' '  ' | tr -s ' ')"
  score="$(printf '%s' "$status" | sed -n 's/.*score=\(-\{0,1\}[0-9.]*\).*/\1/p')"
  rules="$(printf '%s' "$status" | sed -n 's/.*tests=\(.*\)/\1/p' | sed 's/ autolearn=.*//; s/ //g')"
  # Both verifiers report every signature "pass" (RSA and Ed25519 when dual-signed).
  dkim_file="$OUT/$kind.dkim"
  if [ -s "$dkim_file" ] && ! grep -qv ' pass ' "$dkim_file" && grep -q '^mailauth pass' "$dkim_file" && grep -q '^mail-dkim pass' "$dkim_file"; then
    dkim="pass($(grep -c '^mailauth pass' "$dkim_file")+$(grep -c '^mail-dkim pass' "$dkim_file"))"
  else
    dkim="FAIL"; fail=1
    sed 's/^/    /' "$dkim_file" >&2 || true
  fi
  printf '%-28s %6s  %-10s %s\n' "$kind" "$score" "$dkim" "$rules"
  if awk -v s="$score" -v m="$MAX" 'BEGIN{exit !(s>=m)}'; then fail=1; fi
done
if [ "$fail" -ne 0 ]; then echo "FAIL: a message scored $MAX or more, or a DKIM signature did not pass" >&2; exit 1; fi
echo "all messages under $MAX, DKIM passes with both verifiers"
