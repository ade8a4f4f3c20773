#!/usr/bin/env bash
# The Debian package, installed for real: builds it (scripts/package.sh), installs it with dpkg,
# runs `waitroomd check` on its configuration, finds its man page, key and user, starts the
# binary as the package's user on a free port in front of the demo origin, proxies one request,
# then purges the package and checks that nothing of it is left.
#   package_test.sh SOURCE_DIR PACKAGE_BUILD_DIR DEMO_ORIGIN
# Exit 77 (skipped) when not root, without dpkg, or when a waitroomd package is already installed
# (the test must not purge an operator's install).
set -euo pipefail
src="$1"
pkg_dir="$2"
demo_origin="$3"

skip() { echo "skipped: $*"; exit 77; }
[[ $(id -u) -eq 0 ]] || skip "needs root (dpkg -i)"
command -v dpkg >/dev/null || skip "no dpkg"
# Written before the install, removed after the purge: a run killed in between (ctest's timeout
# sends SIGKILL, which no trap sees) left its own install, which the next run purges first.
ours=/run/waitroomd-package-test.installed
status="$(dpkg-query -W -f='${db:Status-Status}' waitroomd 2>/dev/null || true)"
if [[ -n "$status" && "$status" != not-installed && -e "$ours" ]]; then
  echo "purging the install of an earlier run that was killed"
  dpkg --purge waitroomd
  status=""
fi
rm -f "$ours"
# Anything of an operator's (a package in any state, its user, group or folders) is left alone.
if [[ -n "$status" && "$status" != not-installed ]]; then
  skip "a waitroomd package is on this machine already ($status)"
fi
if getent passwd waitroomd >/dev/null || getent group waitroomd >/dev/null ||
   [[ -e /var/lib/waitroomd || -e /etc/waitroomd ]]; then
  skip "a waitroomd user, group or folder exists already"
fi

fail() { echo "FAIL: $*" >&2; exit 1; }
work="$(mktemp -d /tmp/waitroomd-package-test.XXXXXX)"
chmod 755 "$work"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [[ -e "$ours" ]]; then
    dpkg --purge waitroomd >/dev/null 2>&1 || true
    rm -f "$ours"
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# free_port, wait_port: the bench scripts' own.
. "$src/scripts/ports.sh"

echo "== build"
deb="$("$src/scripts/package.sh" "$pkg_dir" | tail -n 1)"
[[ -f "$deb" ]] || fail "scripts/package.sh made no .deb"
echo "package: $deb"

echo "== install"
touch "$ours"
dpkg -i "$deb"
[[ "$(dpkg-query -W -f='${Status}' waitroomd)" == "install ok installed" ]] || fail "not installed"
/usr/bin/waitroomd --version | grep -q '^waitroomd ' || fail "--version"
/usr/bin/waitroomd check -c /etc/waitroomd/waitroom.yaml || fail "check of the packaged config"
grep -qx /etc/waitroomd/waitroom.yaml /var/lib/dpkg/info/waitroomd.conffiles ||
  fail "the configuration is not a conffile"
getent passwd waitroomd >/dev/null || fail "no waitroomd user"
key=/var/lib/waitroomd/waitroom.key
[[ "$(stat -c '%a %U' "$key")" == "600 waitroomd" ]] || fail "key: $(stat -c '%a %U' "$key")"
[[ -f /usr/lib/systemd/system/waitroomd.service ]] || fail "no systemd unit"
grep -q '^ExecStart=/usr/bin/waitroomd -c /etc/waitroomd/waitroom.yaml$' \
  /usr/lib/systemd/system/waitroomd.service || fail "the unit does not start the packaged binary"
grep -q '^User=waitroomd$' /usr/lib/systemd/system/waitroomd.service || fail "the unit's user"
if grep -nE '/usr/local|/etc/waitroom([^d]|$)|/var/lib/waitroom([^d]|$)|=waitroom$' \
     /usr/lib/systemd/system/waitroomd.service; then
  fail "the unit still names a path or user of the sources' unit (above)"
fi
[[ "$(stat -c '%a %U %G' /etc/waitroomd/waitroom.yaml)" == "640 root waitroomd" ]] ||
  fail "config: $(stat -c '%a %U %G' /etc/waitroomd/waitroom.yaml)"
if command -v man >/dev/null; then
  man -P cat waitroomd 2>/dev/null | grep -q "waiting-room gateway" || fail "man waitroomd"
fi
echo "== run as waitroomd"
origin_port="$(free_port)"
"$demo_origin" --listen "127.0.0.1:$origin_port" >"$work/origin.log" 2>&1 &
pids+=($!)
wait_port "$origin_port" || { cat "$work/origin.log"; fail "the demo origin did not listen"; }
port="$(free_port)"
sed -e "s|^listen: .*|listen: [\"127.0.0.1:$port\"]|" \
    -e "s|url: http://127.0.0.1:3000|url: http://127.0.0.1:$origin_port|" \
    -e "s|^  listen: 127.0.0.1:9090|  listen: \"\"|" \
    /etc/waitroomd/waitroom.yaml >"$work/waitroom.yaml"
chmod 644 "$work/waitroom.yaml"
runuser -u waitroomd -- /usr/bin/waitroomd -c "$work/waitroom.yaml" >"$work/waitroomd.log" 2>&1 &
pids+=($!)
wait_port "$port" || { cat "$work/waitroomd.log"; fail "waitroomd did not listen as its user"; }
code="$(curl -s -o "$work/body" -D "$work/head" -w '%{http_code}' "http://127.0.0.1:$port/")"
[[ "$code" == 200 ]] || { cat "$work/waitroomd.log"; fail "proxied request: HTTP $code"; }
grep -qi '^set-cookie: _cfwaitingroom' "$work/head" || fail "no admission cookie"
pgrep -u waitroomd -x waitroomd >/dev/null || fail "the daemon does not run as user waitroomd"
kill "${pids[1]}"; wait "${pids[1]}" 2>/dev/null || true

echo "== purge"
dpkg --purge waitroomd
rm -f "$ours"
dpkg-query -W waitroomd >/dev/null 2>&1 && fail "still known to dpkg after the purge"
left=()
for path in /usr/bin/waitroomd /etc/waitroomd /var/lib/waitroomd /usr/share/waitroomd \
            /usr/lib/systemd/system/waitroomd.service /usr/share/man/man8/waitroomd.8; do
  [[ -e "$path" ]] && left+=("$path")
done
dpkg-statoverride --list /etc/waitroomd/waitroom.yaml >/dev/null && left+=("the config's statoverride")
getent passwd waitroomd >/dev/null && left+=("user waitroomd")
getent group waitroomd >/dev/null && left+=("group waitroomd")
((${#left[@]} == 0)) || fail "left behind: ${left[*]}"
echo "package test: installed, checked, proxied as waitroomd, purged clean"
