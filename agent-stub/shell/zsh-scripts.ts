// zsh is pointed at a private ZDOTDIR holding these files; each one loads the user's file of the same
// name with the user's ZDOTDIR in place, so no user file is ever edited.

/** Our `.zshenv`: captures the nonce and the user's ZDOTDIR, then loads the user's `.zshenv`. */
export const ZSHENV_SCRIPT = `# ptyrelay: zsh reads this because ZDOTDIR points here. Load the user's file with their ZDOTDIR, then
# point ZDOTDIR back here so that zsh reads our .zprofile/.zshrc next.
__ptyrelay_zdotdir=$ZDOTDIR
__ptyrelay_user_zdotdir=\${PTYRELAY_USER_ZDOTDIR:-$HOME}
__ptyrelay_nonce=\${PTYRELAY_NONCE-}
builtin unset PTYRELAY_USER_ZDOTDIR PTYRELAY_NONCE
ZDOTDIR=$__ptyrelay_user_zdotdir
if [[ -f "$ZDOTDIR/.zshenv" ]]; then
  builtin source "$ZDOTDIR/.zshenv"
fi
# The user's .zshenv may move ZDOTDIR; their later files then come from there.
__ptyrelay_user_zdotdir=\${ZDOTDIR:-$HOME}
ZDOTDIR=$__ptyrelay_zdotdir
`;

/** Our `.zprofile` (login shells only): loads the user's `.zprofile`. */
export const ZPROFILE_SCRIPT = `# ptyrelay: see .zshenv.
ZDOTDIR=$__ptyrelay_user_zdotdir
if [[ -f "$ZDOTDIR/.zprofile" ]]; then
  builtin source "$ZDOTDIR/.zprofile"
fi
__ptyrelay_user_zdotdir=\${ZDOTDIR:-$HOME}
ZDOTDIR=$__ptyrelay_zdotdir
`;

/**
 * Our `.zshrc`: loads the user's `.zshrc`, installs the OSC 633 hooks (appended to
 * `precmd_functions`/`preexec_functions`) and restores the user's ZDOTDIR so zsh reads their `.zlogin`.
 */
export const ZSHRC_SCRIPT = `# ptyrelay: see .zshenv. Functions come first so that user aliases cannot leak into them.
__ptyrelay_escape() {
  emulate -L zsh
  local s=\${1-} out= c bs='\\'
  s=\${s//$bs/$bs$bs}
  s=\${s//;/$bs'x3b'}
  if [[ $s == *[[:cntrl:]]* ]]; then
    for c in "\${(@s::)s}"; do
      if (( #c >= 0 && #c < 32 )); then
        c=$bs'x'\${(l:2::0:)\${(L)$(( [##16] #c ))}}
      fi
      out+=$c
    done
    s=$out
  fi
  typeset -g __ptyrelay_r=$s
}

__ptyrelay_preexec() {
  emulate -L zsh
  typeset -g __ptyrelay_ran=1
  __ptyrelay_escape "\${1-}"
  local cmd=$__ptyrelay_r
  __ptyrelay_escape "$__ptyrelay_nonce"
  builtin printf '\\e]633;E;%s;%s\\a\\e]633;C\\a' "$cmd" "$__ptyrelay_r"
  # zsh prints PROMPT_SP's end-of-line mark before precmd runs, so the command's end marker (its
  # exit status is %? there) goes in front of that mark, zero width, until precmd takes it out.
  if [[ -o prompt_sp && -o prompt_cr ]]; then
    typeset -g __ptyrelay_eol_set=\${PROMPT_EOL_MARK+1} __ptyrelay_eol=\${PROMPT_EOL_MARK-}
    PROMPT_EOL_MARK=$__ptyrelay_eol_end\${PROMPT_EOL_MARK-'%B%S%#%s%b'}
  fi
}

__ptyrelay_precmd() {
  local ret=$?
  emulate -L zsh
  if (( __ptyrelay_ran )); then
    if [[ \${PROMPT_EOL_MARK-} == "$__ptyrelay_eol_end"* ]]; then
      # PROMPT_SP printed the end marker unless the command turned it off.
      [[ -o prompt_sp && -o prompt_cr ]] || builtin printf '\\e]633;D;%s\\a' "$ret"
      if (( __ptyrelay_eol_set )); then
        PROMPT_EOL_MARK=$__ptyrelay_eol
      else
        builtin unset PROMPT_EOL_MARK
      fi
    else
      builtin printf '\\e]633;D;%s\\a' "$ret"
    fi
  fi
  typeset -g __ptyrelay_ran=0
  __ptyrelay_escape "$PWD"
  builtin printf '\\e]633;P;Cwd=%s\\a\\e]633;A\\a' "$__ptyrelay_r"
  if [[ \${PS1-} != *"$__ptyrelay_ps1"* ]]; then
    PS1=\${PS1-}$__ptyrelay_ps1
  fi
  return ret
}

ZDOTDIR=$__ptyrelay_user_zdotdir
if [[ -f "$ZDOTDIR/.zshrc" ]]; then
  builtin source "$ZDOTDIR/.zshrc"
fi

() {
  emulate -L zsh
  typeset -g __ptyrelay_user_zdotdir=\${ZDOTDIR:-$HOME}
  # Leave ZDOTDIR as the user would have it, so zsh reads their .zlogin and child shells behave.
  if [[ $__ptyrelay_user_zdotdir == "$HOME" ]]; then
    builtin unset ZDOTDIR
  else
    ZDOTDIR=$__ptyrelay_user_zdotdir
  fi
  typeset -g __ptyrelay_ran=0 __ptyrelay_r=
  typeset -g __ptyrelay_ps1=$'%{\\e]633;B\\a%}'
  typeset -g __ptyrelay_eol_end=$'%{\\e]633;D;%?\\a%}' __ptyrelay_eol_set=0 __ptyrelay_eol=
  precmd_functions=(\${precmd_functions:#__ptyrelay_precmd} __ptyrelay_precmd)
  preexec_functions=(\${preexec_functions:#__ptyrelay_preexec} __ptyrelay_preexec)
}
`;
