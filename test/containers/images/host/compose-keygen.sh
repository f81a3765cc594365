#!/bin/sh
# One-shot service of docker-compose.yml: makes the demo's keys in the shared dir unless present:
#   id_ed25519(.pub)        the relay's user key (authorized on every host)
#   <host>_host_ed25519     each host's host key
#   known_hosts             those host keys at 127.0.0.1:<port>, for the relay's knownHostsFile
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
echo "ptyrelay keys ready in $dir"
