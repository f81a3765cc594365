import { constants as osConstants } from 'node:os';
import { type Command, positionalNames, usageError } from './command.js';
import { connectRelay } from './relay-connect.js';

/** Completion asks the relay once, quickly: a TAB must not hang on an unreachable relay. */
const COMPLETION_CONNECT_ATTEMPTS = 1;

/** Candidates for one positional named in a usage line. */
function fromName(name: string): string[] {
  if (name === 'ID' || name === 'HOST/ID') return ['@ids'];
  if (name === 'HOST') return ['@hosts'];
  if (name === 'SIG') return Object.keys(osConstants.signals).map((s) => s.slice(3));
  return name.includes('|') ? name.split('|') : [];
}

/** Terminal ids or host names from the relay; nothing when it cannot be reached. */
async function fromRelay(kind: '@ids' | '@hosts'): Promise<string[]> {
  const client = await connectRelay({ quiet: true, connectAttempts: COMPLETION_CONNECT_ATTEMPTS }).catch(
    () => undefined,
  );
  if (!client) return [];
  try {
    return kind === '@ids'
      ? (await client.listTerminals()).map((t) => t.id)
      : (await client.hosts()).map((h) => h.name);
  } finally {
    await client.dispose();
  }
}

/**
 * What may come next after `words` (the words typed after `ptyrelay`, the current one
 * excluded): command names, the command's flags, or its next positional's values. The shell
 * filters them by the current word's prefix.
 */
export async function completeWords(commands: Record<string, Command>, words: string[]): Promise<string[]> {
  if (words.length === 0) return [...Object.keys(commands), '--help', '--version'];
  const cmd = commands[words[0]!];
  if (!cmd || words.includes('--')) return [];
  const options: Record<string, { type: string }> = {
    json: { type: 'boolean' },
    help: { type: 'boolean' },
    ...cmd.options,
  };
  const takesValue = (w: string) => w.startsWith('--') && options[w.slice(2)]?.type === 'string';
  if (takesValue(words.at(-1)!)) return [];
  let position = 0;
  for (let i = 1; i < words.length; i++) {
    if (takesValue(words[i]!)) i++;
    else if (!words[i]!.startsWith('-')) position++;
  }
  const flags = Object.keys(options).map((o) => `--${o}`);
  const sources = (cmd.completions ?? positionalNames(cmd).map(fromName))[position] ?? [];
  const values: string[] = [];
  for (const s of sources) {
    if (s === '@ids' || s === '@hosts') values.push(...(await fromRelay(s)));
    else values.push(s);
  }
  return [...values, ...flags];
}

function bashScript(): string {
  return `# ptyrelay completion for bash: source <(ptyrelay completion bash)
_ptyrelay() {
  local cur=\${COMP_WORDS[COMP_CWORD]}
  local IFS=$'\\n'
  COMPREPLY=($(compgen -W "$(ptyrelay completion words -- "\${COMP_WORDS[@]:1:COMP_CWORD-1}" 2>/dev/null)" -- "$cur"))
}
complete -o default -F _ptyrelay ptyrelay
`;
}

function zshScript(): string {
  return `#compdef ptyrelay
# ptyrelay completion for zsh: source <(ptyrelay completion zsh) after compinit
_ptyrelay() {
  local -a words_before candidates
  words_before=("\${(@)words[2,CURRENT-1]}")
  candidates=("\${(@f)$(ptyrelay completion words -- "\${(@)words_before}" 2>/dev/null)}")
  compadd -- "\${(@)candidates}"
}
if (( $+functions[compdef] )); then compdef _ptyrelay ptyrelay; fi
`;
}

/** `completion bash|zsh`: prints the script; `completion words -- …` is what the script calls. */
export function completionCommands(all: () => Record<string, Command>): Record<string, Command> {
  const completion: Command = {
    usage: 'completion bash|zsh',
    summary: 'Prints a shell completion script: source <(ptyrelay completion bash).',
    help: `  bash: add  source <(ptyrelay completion bash)  to ~/.bashrc
  zsh:  add  source <(ptyrelay completion zsh)   to ~/.zshrc (after compinit)
Completes commands, flags, host names and terminal ids (asked from the running relay).`,
    positionals: [1, 1],
    async run(args) {
      const shell = args.positionals[0];
      if (shell === 'bash') process.stdout.write(bashScript());
      else if (shell === 'zsh') process.stdout.write(zshScript());
      else if (shell === 'words') {
        const out = await completeWords(all(), args.rest);
        if (out.length > 0) process.stdout.write(`${out.join('\n')}\n`);
      } else throw usageError(`unknown shell ${JSON.stringify(shell)} (bash or zsh)`);
      return 0;
    },
  };
  return { completion };
}
