/**
 * Bash integration script, passed to `bash --init-file`. It loads the user's startup files the way an
 * interactive (login or non-login) bash would, then installs the OSC 633 prompt/command hooks.
 * Expects PTYRELAY_NONCE and PTYRELAY_LOGIN in the environment and removes them from it.
 */
export const BASH_SCRIPT = `# ptyrelay shell integration for bash, loaded via --init-file in place of the user's startup files.
__ptyrelay_nonce=\${PTYRELAY_NONCE-}
__ptyrelay_login=\${PTYRELAY_LOGIN-0}
builtin unset PTYRELAY_NONCE PTYRELAY_LOGIN

# Functions are defined before the user's files so that user aliases cannot leak into them.
__ptyrelay_escape() {
  local __ptyrelay_s=\${1-} __ptyrelay_out='' __ptyrelay_c __ptyrelay_i __ptyrelay_n __ptyrelay_bs='\\'
  __ptyrelay_s=\${__ptyrelay_s//"$__ptyrelay_bs"/"$__ptyrelay_bs$__ptyrelay_bs"}
  __ptyrelay_s=\${__ptyrelay_s//;/'\\x3b'}
  if [[ $__ptyrelay_s == *[[:cntrl:]]* ]]; then
    for ((__ptyrelay_i = 0; __ptyrelay_i < \${#__ptyrelay_s}; __ptyrelay_i++)); do
      __ptyrelay_c=\${__ptyrelay_s:__ptyrelay_i:1}
      builtin printf -v __ptyrelay_n '%d' "'$__ptyrelay_c"
      if ((__ptyrelay_n >= 0 && __ptyrelay_n < 32)); then
        builtin printf -v __ptyrelay_c '\\\\x%02x' "$__ptyrelay_n"
      fi
      __ptyrelay_out+=$__ptyrelay_c
    done
    __ptyrelay_s=$__ptyrelay_out
  fi
  __ptyrelay_r=$__ptyrelay_s
}

__ptyrelay_status() {
  return "\${1-0}"
}

# Runs inside PS0's command substitution, i.e. in a subshell: it may only print.
__ptyrelay_preexec() {
  local __ptyrelay_line='' __ptyrelay_cmd
  if [[ :$SHELLOPTS: == *:history:* ]]; then
    # An unchanged HISTCMD means the line was not added; with ignorespace or HISTIGNORE the last
    # entry may then be an older command, so send nothing rather than the wrong line.
    if [[ \${HISTCMD-} != "\${__ptyrelay_histcmd-}" ]] ||
      [[ :\${HISTCONTROL-}: != *:ignorespace:* && :\${HISTCONTROL-}: != *:ignoreboth:* && -z \${HISTIGNORE-} ]]; then
      __ptyrelay_line=$(HISTTIMEFORMAT='' builtin history 1)
      __ptyrelay_line=\${__ptyrelay_line#"\${__ptyrelay_line%%[![:space:]]*}"}
      __ptyrelay_line=\${__ptyrelay_line#"\${__ptyrelay_line%%[!0-9]*}"}
      __ptyrelay_line=\${__ptyrelay_line:1}
      __ptyrelay_line=\${__ptyrelay_line# }
    fi
  fi
  __ptyrelay_escape "$__ptyrelay_line"
  __ptyrelay_cmd=$__ptyrelay_r
  __ptyrelay_escape "$__ptyrelay_nonce"
  builtin printf '\\e]633;E;%s;%s\\a\\e]633;C\\a' "$__ptyrelay_cmd" "$__ptyrelay_r"
}

__ptyrelay_precmd() {
  local __ptyrelay_ret=$? __ptyrelay_pc
  for __ptyrelay_pc in \${__ptyrelay_user_pc[@]+"\${__ptyrelay_user_pc[@]}"}; do
    __ptyrelay_status "$__ptyrelay_ret"
    builtin eval "$__ptyrelay_pc"
  done
  if ((__ptyrelay_ran)); then
    builtin printf '\\e]633;D;%s\\a' "$__ptyrelay_ret"
  fi
  __ptyrelay_ran=0
  __ptyrelay_histcmd=\${HISTCMD-}
  __ptyrelay_escape "$PWD"
  builtin printf '\\e]633;P;Cwd=%s\\a\\e]633;A\\a' "$__ptyrelay_r"
  if [[ \${PS1-} != *"$__ptyrelay_ps1"* ]]; then
    PS1=\${PS1-}$__ptyrelay_ps1
  fi
  if [[ -n $__ptyrelay_ps0 && \${PS0-} != *"$__ptyrelay_ps0"* ]]; then
    PS0=\${PS0-}$__ptyrelay_ps0
  fi
  return "$__ptyrelay_ret"
}

# Behave like a login or non-login interactive bash. A bash built with SYS_BASHRC (Debian,
# Arch, ...) has already read /etc/bash.bashrc before this file, so it is not sourced again.
if [ "$__ptyrelay_login" = 1 ]; then
  if [ -r /etc/profile ]; then . /etc/profile; fi
  if [ -r ~/.bash_profile ]; then
    . ~/.bash_profile
  elif [ -r ~/.bash_login ]; then
    . ~/.bash_login
  elif [ -r ~/.profile ]; then
    . ~/.profile
  fi
else
  if [ -r ~/.bashrc ]; then . ~/.bashrc; fi
fi

if [[ -z \${__ptyrelay_installed-} ]]; then
  __ptyrelay_installed=1
  __ptyrelay_ran=0
  __ptyrelay_histcmd=''
  __ptyrelay_r=''
  __ptyrelay_dummy=()
  __ptyrelay_user_pc=()
  if builtin declare -p PROMPT_COMMAND >/dev/null 2>&1; then
    __ptyrelay_user_pc=(\${PROMPT_COMMAND[@]+"\${PROMPT_COMMAND[@]}"})
    builtin unset PROMPT_COMMAND
  fi
  PROMPT_COMMAND=__ptyrelay_precmd
  __ptyrelay_ps1='\\[\\e]633;B\\a\\]'
  __ptyrelay_ps0=''
  # PS0 needs bash 4.4. Its arithmetic subscript runs in this shell, the $(...) in a subshell.
  if ((BASH_VERSINFO[0] > 4 || (BASH_VERSINFO[0] == 4 && BASH_VERSINFO[1] >= 4))); then
    __ptyrelay_ps0='\${__ptyrelay_dummy[__ptyrelay_ran=1]:-}$(__ptyrelay_preexec)'
  fi
fi
`;
