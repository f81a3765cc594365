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
  /**
   * Shell-completion candidates per positional (`@ids`: terminal ids, `@hosts`: host names);
   * default from the usage's names (ID, HOST, SIG, `a|b` alternatives).
   */
  completions?: string[][];
  run(args: CommandArgs): Promise<number>;
}

/** Marks an INVALID_ARGUMENT as a usage error: the command's usage line is printed with it. */
const USAGE = 'usage';

/** A usage error (bad flag, missing argument, bad PTYRELAY_URL): one line, then the usage; exit 2. */
export function usageError(message: string): PtyRelayError {
  return new PtyRelayError('INVALID_ARGUMENT', message, { [USAGE]: true });
}

function isUsageError(err: PtyRelayError): boolean {
  return err.code === 'INVALID_ARGUMENT' && err.details?.[USAGE] === true;
}

/** Our one-line text for node:util parseArgs errors (its own text is long and talks about itself). */
function parseArgsMessage(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  const opt = /'(-[^' ]+)/.exec(e.message ?? '')?.[1];
  switch (e.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return `unknown option ${opt}`;
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE':
      return /does not take/.test(e.message) ? `${opt} takes no value` : `${opt} needs a value`;
    default:
      return (e.message ?? String(err)).split('\n')[0]!;
  }
}

/** Names of a command's positional arguments, from its usage (`send ID TEXT` → ID, TEXT). */
export function positionalNames(cmd: Command): string[] {
  const words = cmd.usage.split(' ').slice(1);
  const names: string[] = [];
  for (const w of words) {
    const m = /^\[?([A-Za-z][A-Za-z_|/]*)\]?$/.exec(w);
    if (!m) break;
    names.push(m[1]!);
  }
  return names;
}

/** Parses a command's `argv`; throws a usage error on bad input. */
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
    throw usageError(parseArgsMessage(err));
  }
  const values = parsed.values as CommandArgs['values'];
  const [min, max] = cmd.positionals ?? [0, 0];
  const got = parsed.positionals.length;
  if (!values.help && got < min) {
    throw usageError(`missing ${positionalNames(cmd).slice(got, min).join(' ') || 'argument'}`);
  }
  if (!values.help && got > max) {
    throw usageError(`unexpected argument ${JSON.stringify(parsed.positionals[max])}`);
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

/** Prints an error on stderr (JSON with --json) and returns the exit code; usage errors add the usage. */
export function reportError(err: unknown, json: boolean, cmd?: Command): number {
  const e = isPtyRelayError(err)
    ? err
    : new PtyRelayError('PROTOCOL_ERROR', (err as Error)?.message ?? String(err));
  const usage = isUsageError(e) && cmd ? `usage: ptyrelay ${cmd.usage}` : undefined;
  if (json) {
    const shape = { code: e.code, message: e.message, ...(usage ? { usage } : {}) };
    process.stderr.write(`${JSON.stringify({ error: shape })}\n`);
  } else if (isUsageError(e)) {
    process.stderr.write(`ptyrelay: ${e.message}\n${usage ? `${usage}\n` : ''}`);
  } else process.stderr.write(`ptyrelay: ${e.code}: ${e.message}\n`);
  return e.code === 'INVALID_ARGUMENT' ? 2 : 1;
}

/** Pads columns of rows for a human table. */
export function table(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows
    .map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  '))
    .join('\n');
}
