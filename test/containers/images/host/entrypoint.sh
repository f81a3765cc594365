#!/bin/sh
# Starts sshd in the foreground for $LOGIN_USER on 127.0.0.1:$SSH_PORT.
#   AUTHORIZED_KEY       the user's authorized key line, or
#   AUTHORIZED_KEY_FILE  a file holding it (docker-compose shares a generated key through a volume);
#   HOST_KEY_FILE        an ed25519 host key to use (docker-compose: stable across `down`/`up`, so
#                        the relay's known_hosts stays valid); without it, host keys are made on
#                        first boot and kept in the container, so they survive a restart.
set -eu
home="/home/$LOGIN_USER"
# A shared volume may be filled by another service that starts at the same time.
wait_for() {
  i=0
  while [ ! -s "$1" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  [ -s "$1" ] || { echo "ptyrelay host: $1 never appeared" >&2; exit 1; }
}
if [ -n "${AUTHORIZED_KEY_FILE:-}" ]; then
  wait_for "$AUTHORIZED_KEY_FILE"
  AUTHORIZED_KEY="$(cat "$AUTHORIZED_KEY_FILE")"
fi
if [ -n "${AUTHORIZED_KEY:-}" ]; then
  printf '%s\n' "$AUTHORIZED_KEY" > "$home/.ssh/authorized_keys"
  chown "$LOGIN_USER:" "$home/.ssh/authorized_keys"
  chmod 600 "$home/.ssh/authorized_keys"
fi
if [ -n "${HOST_KEY_FILE:-}" ]; then
  wait_for "$HOST_KEY_FILE"
  rm -f /etc/ssh/ssh_host_*
  install -m 600 "$HOST_KEY_FILE" /etc/ssh/ssh_host_ed25519_key
  ssh-keygen -y -f /etc/ssh/ssh_host_ed25519_key > /etc/ssh/ssh_host_ed25519_key.pub
else
  ssh-keygen -A >/dev/null
fi
mkdir -p /run/sshd
echo "ptyrelay host: sshd for $LOGIN_USER on 127.0.0.1:$SSH_PORT"
exec /usr/sbin/sshd -D -e -p "$SSH_PORT"
