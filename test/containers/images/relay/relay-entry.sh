#!/bin/sh
# Runs `ptyrelay serve` on ${RELAY_LISTEN:-127.0.0.1:$RELAY_PORT} (extra arguments go to serve) with
# what it keeps in the data dir $PTYRELAY_DATA (/data, a volume), shared by every relay of a fleet:
#   relay.json               the config (compose's keygen writes it; key paths relative to it)
#   token                    the startup token (admin), made by the first relay that starts
#   tokens/                  the scoped-token store (`ptyrelay token`, the token API)
#   id_ed25519, known_hosts  the SSH key and the hosts' keys that relay.json names
# It runs as the owner of the data dir, so the user who made that dir reads the token; its HOME is
# the container's own (the built-in `local` host's daemon lives there, one per relay container).
set -eu
data="${PTYRELAY_DATA:-/data}"
export PTYRELAY_CONFIG="${PTYRELAY_CONFIG:-$data/relay.json}"
export PTYRELAY_TOKEN_FILE="${PTYRELAY_TOKEN_FILE:-$data/token}"
export PTYRELAY_TOKEN_DIR="${PTYRELAY_TOKEN_DIR:-$data/tokens}"
listen="${RELAY_LISTEN:-127.0.0.1:$RELAY_PORT}"
# The relay's Node options (relay/core/relay-runtime.ts says why).
NODE_FLAGS="--max-semi-space-size=1"
relay="$(command -v ptyrelay)"

# The config may be written by a service that starts at the same time (compose's keygen).
i=0
while [ ! -s "$PTYRELAY_CONFIG" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
[ -s "$PTYRELAY_CONFIG" ] || { echo "ptyrelay relay: $PTYRELAY_CONFIG never appeared" >&2; exit 1; }

echo "ptyrelay relay: web page http://$listen/ ; token: the file 'token' in the data dir (compose: .compose/token)"
# Started as another user (Kubernetes' runAsUser): that user it is, with a HOME it can write.
if [ "$(id -u)" != 0 ]; then
  [ -w "${HOME:-/}" ] || HOME=/tmp/ptyrelay-home
  mkdir -p "$HOME"
  export HOME SHELL=/bin/bash
  exec node $NODE_FLAGS "$relay" serve --listen "$listen" "$@"
fi

uid="$(stat -c %u "$data")"
gid="$(stat -c %g "$data")"
# A passwd entry gives the `local` host's shells a user name.
if ! getent passwd "$uid" >/dev/null; then
  getent group "$gid" >/dev/null || groupadd -g "$gid" relay
  useradd -M -u "$uid" -g "$gid" -d /home/relay -s /bin/bash relay
fi
HOME="$(getent passwd "$uid" | cut -d: -f6)"
mkdir -p "$HOME"
chown "$uid:$gid" "$HOME"
export HOME SHELL=/bin/bash
exec setpriv --reuid="$uid" --regid="$gid" --clear-groups -- node $NODE_FLAGS "$relay" serve --listen "$listen" "$@"
