#!/usr/bin/env bash
# Builds the container images the container suites and docker-compose.yml use, without a registry:
#   1. a Debian bookworm rootfs from debootstrap (minbase + sshd, node 18, shells), `docker import`ed;
#   2. the host image on top (login user, sshd on $SSH_PORT at 127.0.0.1, key given at run time);
#   3. the same host without node (for the NODE_MISSING suite);
#   4. with the argument `relay`: the relay image (build-relay-image.sh; needs `npm run build` first).
# Each tag carries a hash of what went into it, so an image is reused while its inputs are unchanged
# and rebuilt when they change. Prints the image names as NAME=value lines on stdout.
# Env: PTYRELAY_DEBIAN_MIRROR overrides the mirror (default: the first bookworm URI in apt sources).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

SUITE=bookworm
# Packages of the base rootfs: sshd for the relay, node (18 on bookworm) for the stub, procps for the
# stub's process probes, the shells the tests drive, HAProxy for the compose fleet's balancer.
INCLUDE=openssh-server,nodejs,procps,bash,zsh,python3,haproxy
LOCK_FILE=/tmp/ptyrelay-images.lock

log() { echo "build-images: $*" >&2; }

hash_of() { sha256sum | cut -c1-12; }

apt_mirror() {
  if [ -n "${PTYRELAY_DEBIAN_MIRROR:-}" ]; then echo "$PTYRELAY_DEBIAN_MIRROR"; return; fi
  local uri
  # deb822 sources: the URIs line of a stanza whose Suites name bookworm (not -security).
  uri="$(awk '/^URIs:/{u=$2} /^Suites:/{ for (i=2;i<=NF;i++) if ($i=="'"$SUITE"'") { print u; exit } }' \
    /etc/apt/sources.list.d/*.sources 2>/dev/null || true)"
  if [ -z "$uri" ] && [ -f /etc/apt/sources.list ]; then
    uri="$(awk '$1=="deb" && $3=="'"$SUITE"'" {print $2; exit}' /etc/apt/sources.list)"
  fi
  echo "${uri:-http://deb.debian.org/debian}"
}

have_image() { docker image inspect "$1" >/dev/null 2>&1; }

build_base() {
  local tag="$1" root
  root="$(mktemp -d /var/tmp/ptyrelay-rootfs.XXXXXX)"
  # The RETURN trap would outlive this function (and fire again, with $root gone, when main returns).
  trap 'rm -rf "$root"; trap - RETURN' RETURN
  local mirror
  mirror="$(apt_mirror)"
  log "debootstrap $SUITE from $mirror (about 40 s)"
  local t0=$SECONDS
  debootstrap --variant=minbase --include="$INCLUDE" "$SUITE" "$root" "$mirror" >&2
  # Apt caches and lists are dead weight in the image.
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar -C "$root" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["/bin/bash"]' - "$tag" >&2
  log "base image $tag built in $((SECONDS - t0)) s"
}

build_from() {
  local tag="$1" dir="$2" base="$3"
  log "building $tag"
  docker build -q --build-arg "BASE=$base" -t "$tag" "$dir" >&2
}

main() {
  command -v docker >/dev/null || { log "docker CLI missing"; exit 2; }
  docker info >/dev/null 2>&1 || { log "no Docker engine answers"; exit 3; }
  exec 9>"$LOCK_FILE"
  flock 9

  local base_tag host_tag nonode_tag
  base_tag="ptyrelay/bookworm-base:$(echo "$SUITE $INCLUDE" | hash_of)"
  host_tag="ptyrelay/host:$( (echo "$base_tag"; cat "$here"/host/*) | hash_of)"
  nonode_tag="ptyrelay/host-nonode:$( (echo "$host_tag"; cat "$here"/host-nonode/*) | hash_of)"

  if have_image "$base_tag"; then log "reusing $base_tag"; else
    command -v debootstrap >/dev/null || { log "debootstrap missing"; exit 2; }
    build_base "$base_tag"
  fi
  if have_image "$host_tag"; then log "reusing $host_tag"; else build_from "$host_tag" "$here/host" "$base_tag"; fi
  if have_image "$nonode_tag"; then log "reusing $nonode_tag"; else
    build_from "$nonode_tag" "$here/host-nonode" "$host_tag"
  fi
  local relay_tag=""
  if [ "${1:-}" = relay ]; then
    relay_tag="$("$here/build-relay-image.sh" "$base_tag")"
    docker tag "$relay_tag" ptyrelay/relay:latest
  fi
  # Older builds of these images are dead weight (an image in use by a container stays). Only the
  # repositories built in this run are swept: a run without `relay` leaves the relay image alone.
  local repo current old
  for repo in bookworm-base host host-nonode ${relay_tag:+relay}; do
    case "$repo" in
      bookworm-base) current="$base_tag" ;;
      host) current="$host_tag" ;;
      host-nonode) current="$nonode_tag" ;;
      relay) current="$relay_tag" ;;
    esac
    for old in $(docker images --format '{{.Repository}}:{{.Tag}}' "ptyrelay/$repo"); do
      case "$old" in
        "$current" | *:latest) ;;
        *) docker rmi "$old" >/dev/null 2>&1 || true ;;
      esac
    done
  done
  # Fixed names for docker-compose.yml, pointing at the current builds.
  docker tag "$host_tag" ptyrelay/host:latest
  docker tag "$nonode_tag" ptyrelay/host-nonode:latest
  echo "PTYRELAY_BASE_IMAGE=$base_tag"
  echo "PTYRELAY_HOST_IMAGE=$host_tag"
  echo "PTYRELAY_NONODE_IMAGE=$nonode_tag"
  if [ -n "$relay_tag" ]; then echo "PTYRELAY_RELAY_IMAGE=$relay_tag"; fi
}

main "$@"
