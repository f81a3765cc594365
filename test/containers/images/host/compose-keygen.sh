#!/bin/sh
# One-shot service of docker-compose.yml: makes the demo's keys in the shared dir unless present, and
# the relay config for them:
#   id_ed25519(.pub)        the relay's user key (authorized on every host)
#   <host>_host_ed25519     each host's host key
#   known_hosts             those host keys at 127.0.0.1:<port>, for the relay's knownHostsFile
#   relay.json              the relay config of the relays in compose: these hosts as user dev (paths
#                           relative to the file, so it also works from outside), and the browser
#                           Origins of $ALLOWED_ORIGINS (the fleet's balancer); rewritten on every up
# Arguments: <dir> <host>:<port>... Files get the owner of <dir> (the user who ran compose).
set -eu
dir="$1"; shift
owner="$(stat -c %u:%g "$dir")"
umask 077
[ -s "$dir/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C ptyrelay-compose -f "$dir/id_ed25519"
: > "$dir/known_hosts.tmp"
for spec in "$@"; do
  name="${spec%%:*}"; port="${spec#*:}"
  key="$dir/${name}_host_ed25519"
  [ -s "$key" ] || ssh-keygen -q -t ed25519 -N '' -C "$name" -f "$key"
  echo "[127.0.0.1]:$port $(cut -d' ' -f1,2 "$key.pub")" >> "$dir/known_hosts.tmp"
done
mv "$dir/known_hosts.tmp" "$dir/known_hosts"

chown -R "$owner" "$dir"
chmod 644 "$dir"/*.pub "$dir/known_hosts"

# The relay config last (relays wait for it), written aside and renamed: running relays watch it
# and must never read half of it.
{
  printf '{\n  "hosts": {'
  sep=''
  for spec in "$@"; do
    name="${spec%%:*}"; port="${spec#*:}"
    printf '%s\n    "%s": { "host": "127.0.0.1", "port": %s, "user": "dev", ' "$sep" "$name" "$port"
    printf '"identityFile": "id_ed25519", "knownHostsFile": "known_hosts", "useAgent": false }'
    sep=','
  done
  printf '\n  },\n  "allowedOrigins": ['
  sep=''
  for origin in ${ALLOWED_ORIGINS:-}; do printf '%s"%s"' "$sep" "$origin"; sep=', '; done
  printf ']\n}\n'
} > "$dir/relay.json.tmp"
chown "$owner" "$dir/relay.json.tmp"
mv "$dir/relay.json.tmp" "$dir/relay.json"
echo "ptyrelay keys and relay.json ready in $dir"
