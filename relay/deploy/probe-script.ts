/**
 * The host probe, a POSIX sh script sent on stdin (`/bin/sh -s`), so no login shell (bash, zsh,
 * fish, tcsh) ever parses it; its result lines carry a random marker so MOTD and rc-file noise on
 * stdout cannot be mistaken for results.
 */

/**
 * POSIX sh probe. Prints `<marker>key=value` lines: uname, home, shell, glibc, and one `cand` line
 * (`<source> <version> <execPath>`) per node found. It looks on the plain PATH first, then asks the
 * user's login shell (non-interactive, then interactive, which is where nvm hooks in via .bashrc/.zshrc),
 * then `bash -lic` and `bash -ic` (a .bash_profile that does not source .bashrc hides nvm from -l),
 * stopping at the first node of at least `minMajor`. Login shells get the
 * original PATH; the probe's own tools get a standard PATH appended in case the user's has none.
 * With `helper`, the node it picked then runs that script (first contact in one remote command).
 */
export function probeScript(marker: string, minMajor: number, helper?: string): string {
  return `M=${marker}
MIN=${Math.floor(minMajor)}
up=$PATH
emit() { printf '%s%s=%s\\n' "$M" "$1" "$2"; }
ok=
cand() {
  [ -n "$2" ] || return 0
  r=$("$2" -p 'process.version+" "+process.execPath' 2>/dev/null </dev/null) || return 0
  pick "$1" "$r"
}
pick() {
  emit cand "$1 $2"
  maj=\${2#v}; maj=\${maj%%.*}
  case "$maj" in ''|*[!0-9]*) return 0 ;; esac
  [ "$maj" -ge "$MIN" ] && { ok=1; okbin=\${2#* }; }
  return 0
}
ran=
${helper ? runWithPathNode(helper) : 'cand path "$(command -v node 2>/dev/null)"'}
PATH="$PATH:/usr/local/bin:/usr/bin:/bin"; export PATH
emit uname "$(uname -sm 2>/dev/null)"
emit home "$HOME"
emit cache "$XDG_CACHE_HOME"
emit shell "$SHELL"
emit glibc "$(getconf GNU_LIBC_VERSION 2>/dev/null)"
to=; t=$(command -v timeout 2>/dev/null) && to="$t 15"
ask() {
  src=$1; shift
  out=$(PATH=$up $to "$@" "echo \${M}begin; command -v node; echo \${M}end" </dev/null 2>/dev/null)
  n=$(printf '%s\\n' "$out" | sed -n "/^\${M}begin\\$/,/^\${M}end\\$/p" | grep '^/' | tail -n 1)
  cand "$src" "$n"
}
if [ -z "$ok" ] && [ -n "$SHELL" ] && [ -x "$SHELL" ]; then
  ask login "$SHELL" -lc
  [ -z "$ok" ] && ask login-interactive "$SHELL" -lic
fi
b=$(command -v bash 2>/dev/null)
if [ -z "$ok" ] && [ -n "$b" ]; then
  [ "$b" != "$SHELL" ] && ask bash-login-interactive "$b" -lic
  [ -z "$ok" ] && ask bash-interactive "$b" -ic
fi
${helper ? runWithPickedNode(helper) : ''}emit end 1
`;
}

const HEREDOC_END = 'PTYRELAY_HELPER_END';

function checkDelimiter(helper: string): void {
  if (helper.split('\n').includes(HEREDOC_END))
    throw new Error('helper script contains its heredoc delimiter');
}

/**
 * Runs `helper` with the node on PATH, saving the `node -p` start: the helper prints
 * `<marker>self=<version> <execPath>` first and does its work only on a new enough node.
 */
function runWithPathNode(helper: string): string {
  checkDelimiter(helper);
  return `n=$(command -v node 2>/dev/null)
if [ -n "$n" ]; then
  out=$(PATH=$up "$n" - <<'${HEREDOC_END}'
${helper}
${HEREDOC_END}
)
  printf '%s\\n' "$out"
  r=$(printf '%s\\n' "$out" | sed -n "s/^.*\${M}self=//p" | tail -n 1)
  [ -n "$r" ] && pick path "$r" && [ -n "$ok" ] && ran=1
fi`;
}

/** Runs `helper` with the node found in a login shell, unless the PATH node already ran it. */
function runWithPickedNode(helper: string): string {
  checkDelimiter(helper);
  return `if [ -n "$ok" ] && [ -z "$ran" ]; then
  PATH=$up "$okbin" - <<'${HEREDOC_END}'
${helper}
${HEREDOC_END}
fi
`;
}
