#!/bin/sh
# Starts sshd in the foreground for $LOGIN_USER on 127.0.0.1:$SSH_PORT. The authorized key comes from
# $AUTHORIZED_KEY or the file $AUTHORIZED_KEY_FILE (docker-compose shares a generated key through a
# volume). Host keys are made on first boot and kept in the container, so they survive a restart.
set -eu
home="/home/$LOGIN_USER"
if [ -n "${AUTHORIZED_KEY_FILE:-}" ]; then
  i=0
  while [ ! -s "$AUTHORIZED_KEY_FILE" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  AUTHORIZED_KEY="$(cat "$AUTHORIZED_KEY_FILE")"
fi
if [ -n "${AUTHORIZED_KEY:-}" ]; then
  printf '%s\n' "$AUTHORIZED_KEY" > "$home/.ssh/authorized_keys"
  chown "$LOGIN_USER:" "$home/.ssh/authorized_keys"
  chmod 600 "$home/.ssh/authorized_keys"
fi
ssh-keygen -A >/dev/null
mkdir -p /run/sshd
echo "ptyrelay host: sshd for $LOGIN_USER on 127.0.0.1:$SSH_PORT"
exec /usr/sbin/sshd -D -e -p "$SSH_PORT"
