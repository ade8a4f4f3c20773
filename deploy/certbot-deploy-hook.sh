#!/bin/sh
# certbot deploy hook for waitroomd: copies a renewed certificate where the daemon's user can read
# it, then reloads the daemon, which re-reads every certificate on reload (open connections keep
# theirs). certbot's own files stay root-only.
#
#   install -m 0755 deploy/certbot-deploy-hook.sh /etc/letsencrypt/renewal-hooks/deploy/waitroomd
#
# certbot runs it as root with RENEWED_LINEAGE=/etc/letsencrypt/live/NAME; by hand, give that
# folder as the first argument. It writes CONFIG_DIR/tls/NAME/fullchain.pem (0644) and
# privkey.pem (0640), owned root:GROUP; point listen[].tls at them, e.g.
#   tls: {cert: tls/NAME/fullchain.pem, key: tls/NAME/privkey.pem}
# Defaults are the Debian package's; deploy/waitroomd.service uses user waitroom and /etc/waitroom:
#   WAITROOM_CONFIG_DIR (/etc/waitroomd)  WAITROOM_GROUP (waitroomd)  WAITROOM_SERVICE (waitroomd)
#   WAITROOMD (waitroomd, the binary used to check the configuration)
#   WAITROOM_PID (none): without systemd, the process to send SIGHUP to
set -eu

config_dir=${WAITROOM_CONFIG_DIR:-/etc/waitroomd}
group=${WAITROOM_GROUP:-waitroomd}
service=${WAITROOM_SERVICE:-waitroomd}
waitroomd=${WAITROOMD:-waitroomd}
lineage=${1:-${RENEWED_LINEAGE:-}}

fail() {
  echo "certbot-deploy-hook: $*" >&2
  exit 1
}

[ -n "$lineage" ] || fail "no certificate: set RENEWED_LINEAGE or give /etc/letsencrypt/live/NAME"
for f in fullchain.pem privkey.pem; do
  [ -r "$lineage/$f" ] || fail "cannot read $lineage/$f"
done
getent group "$group" >/dev/null || fail "no group '$group' (set WAITROOM_GROUP)"
name=$(basename "$lineage")
case $name in
  '' | . | .. | */*) fail "bad certificate name '$name'" ;;
esac
dest=$config_dir/tls/$name

install -d -m 0750 -o root -g "$group" "$config_dir/tls" "$dest"
# Written beside and renamed into place: a reader sees the old file or the new one, never half.
# The key is made 0640 before it holds anything, so others can never read it.
install -m 0644 -o root -g "$group" "$lineage/fullchain.pem" "$dest/.fullchain.pem.new"
install -m 0640 -o root -g "$group" /dev/null "$dest/.privkey.pem.new"
cat "$lineage/privkey.pem" >"$dest/.privkey.pem.new"
mv -f "$dest/.fullchain.pem.new" "$dest/fullchain.pem"
mv -f "$dest/.privkey.pem.new" "$dest/privkey.pem"

# A configuration that does not check (a key that does not match, say) is not reloaded: the
# daemon keeps serving what it has, and certbot reports the failure.
config=$config_dir/waitroom.yaml
if [ -f "$config" ] && command -v "$waitroomd" >/dev/null 2>&1; then
  "$waitroomd" check -c "$config" >/dev/null || fail "$config does not check; not reloading"
fi

if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$service" 2>/dev/null; then
  systemctl reload "$service"
elif [ -n "${WAITROOM_PID:-}" ]; then
  kill -HUP "$WAITROOM_PID"
else
  fail "service $service is not active: the certificate is in place; reload waitroomd (SIGHUP) or set WAITROOM_PID"
fi
echo "certbot-deploy-hook: $name installed in $dest; waitroomd reloaded"
