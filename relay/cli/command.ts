import { type ParseArgsConfig, parseArgs } from 'node:util';
import { isPtyRelayError, PtyRelayError } from '../../provider/errors.js';

/** Options every command accepts. */
const COMMON: NonNullable<ParseArgsConfig['options']> = {
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
};

/** What a command's `run` gets: parsed flags, positionals, and everything after `--`. */
export interface CommandArgs {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
  /** Words after a literal `--` (e.g. the command of `open`). */
  rest: string[];
  json: boolean;
}

/** One CLI command: usage text, its flags, and what it does (resolves with the exit code). */
export interface Command {
  /** First help line, e.g. `open HOST [--cwd DIR] [-- CMD ARGS…]`. */
  usage: string;
  /** One line for the command list. */
  summary: string;
  /** Further help text (flags, examples). */
  help?: string;
  options?: NonNullable<ParseArgsConfig['options']>;
  /** Positional count accepted: [min, max]. */
  positionals?: [number, number];
  run(args: CommandArgs): Promise<number>;
}

/** Parses a command's `argv`; throws INVALID_ARGUMENT with a usage hint on bad input. */
export function parseCommand(cmd: Command, argv: string[]): CommandArgs {
  const dash = argv.indexOf('--');
  const head = dash >= 0 ? argv.slice(0, dash) : argv;
  const rest = dash >= 0 ? argv.slice(dash + 1) : [];
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: head,
      options: { ...COMMON, ...cmd.options },
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    throw new PtyRelayError('INVALID_ARGUMENT', `${(err as Error).message}\nusage: ptyrelay ${cmd.usage}`);
  }
  const values = parsed.values as CommandArgs['values'];
  const [min, max] = cmd.positionals ?? [0, 0];
  if (!values.help && (parsed.positionals.length < min || parsed.positionals.length > max)) {
    throw new PtyRelayError('INVALID_ARGUMENT', `usage: ptyrelay ${cmd.usage}`);
  }
  return { values, positionals: parsed.positionals, rest, json: values.json === true };
}

/** Help text of one command. */
export function commandHelp(cmd: Command): string {
  return `usage: ptyrelay ${cmd.usage}\n\n${cmd.summary}\n${cmd.help ? `\n${cmd.help.trimEnd()}\n` : ''}\n  --json      machine-readable output\n  -h, --help  this text\n`;
}

/** Prints a result: JSON (one line on stdout) or the human text. */
export function output(args: CommandArgs, json: unknown, human: string | (() => string)): void {
  if (args.json) process.stdout.write(`${JSON.stringify(json)}\n`);
  else {
    const text = typeof human === 'function' ? human() : human;
    if (text) process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
  }
}

/** Prints an error on stderr (JSON with --json) and returns the exit code. */
export function reportError(err: unknown, json: boolean): number {
  const e = isPtyRelayError(err)
    ? err
    : new PtyRelayError('PROTOCOL_ERROR', (err as Error)?.message ?? String(err));
  if (json) process.stderr.write(`${JSON.stringify({ error: e.toJSON() })}\n`);
  else process.stderr.write(`ptyrelay: ${e.code}: ${e.message}\n`);
  return e.code === 'INVALID_ARGUMENT' ? 2 : 1;
}

/** Pads columns of rows for a human table. */
export function table(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows
    .map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  '))
    .join('\n');
}
