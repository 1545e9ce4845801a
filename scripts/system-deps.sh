#!/usr/bin/env bash
# Debian packages the test suite uses: nginx and python3-doc (a real documentation site),
# wget (the reference crawler), redis-server (the cluster backend) and postgresql (the shared
# page store), chromium-headless-shell (--render and the web UI's browser tests) and tinyproxy (a
# real forward proxy for the proxy pool's tests). Installed with apt-get when missing and running as root.
set -euo pipefail
missing=()
[ -x /usr/sbin/nginx ] || command -v nginx >/dev/null || missing+=(nginx-light)
[ -d /usr/share/doc/python3-doc/html ] || missing+=(python3-doc)
command -v wget >/dev/null || missing+=(wget)
command -v redis-server >/dev/null || missing+=(redis-server)
command -v chromium-headless-shell >/dev/null || missing+=(chromium-headless-shell)
[ -x /usr/bin/tinyproxy ] || command -v tinyproxy >/dev/null || missing+=(tinyproxy)
# the documentation's commands (tests/test_docs_commands.py): jq and curl as the pages use them,
# ip to bring up the loopback of each block's own network namespace
command -v jq >/dev/null || missing+=(jq)
command -v curl >/dev/null || missing+=(curl)
[ -x /usr/sbin/ip ] || command -v ip >/dev/null || missing+=(iproute2)
# Debian keeps initdb and pg_ctl in /usr/lib/postgresql/<version>/bin, off PATH.
have_postgres() {
    command -v initdb >/dev/null && return 0
    compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null
}
have_postgres || missing+=(postgresql)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
    echo "system-deps: missing ${missing[*]} (not root: the tests that need them are skipped)"
    exit 0
fi
echo "system-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# The packages would start servers (nginx on port 80, redis on 6379, PostgreSQL on 5432) that
# the tests do not use (each test starts its own). Debian's policy-rc.d keeps them from
# starting at all, so nothing needs stopping afterwards and a server the machine was already
# running is never touched.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod +x "$policy"
    trap 'rm -f "$policy"' EXIT
fi
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
