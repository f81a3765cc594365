import { homedir } from 'node:os';
import { join } from 'node:path';
import * as z from 'zod/mini';
import { PtyRelayError } from '../provider/errors.js';

/**
 * The flags of `stub.cjs daemon|ensure|connect`, each `--name value`. A flag given twice keeps
 * its first value: the relay puts a host's own settings before the relay-wide ones. An unknown
 * flag, a flag without its value or a word where a flag belongs is refused (CONFIG_INVALID,
 * `unknown option --bogus`), and so is a bad value (`--ring-bytes must be a positive number,
 * got 1k`), before anything starts.
 *
 * Not node:util's parseArgs: it came with Node 18.3, and the stub runs on whatever Node 18 to
 * 26 a host has; it also keeps the last of a repeated flag.
 */

/** A dir; `~/` at its start means the home dir (the relay config passes it through). */
const dir = () =>
  z.pipe(
    z.string(),
    z.transform((v: string) => (v.startsWith('~/') ? join(process.env.HOME || homedir(), v.slice(2)) : v)),
  );
const word = () => z.string();
const number = (ok: (n: number) => boolean, expected: string) =>
  z.pipe(z.string().check(z.refine((v: string) => ok(Number(v)), expected)), z.transform(Number));
const positive = () => number((n) => Number.isFinite(n) && n > 0, 'must be a positive number');
/** A duration that 0 turns off. */
const nonNegative = () => number((n) => Number.isInteger(n) && n >= 0, 'must be a non-negative integer');
const onOff = () =>
  z.pipe(
    z.enum(['on', 'off'], { error: 'must be on or off' }),
    z.transform((v: 'on' | 'off') => v === 'on'),
  );

/** `#rrggbb,#rrggbb,#rrggbb`: foreground, background, cursor (terminal colour queries' answers). */
const palette = () =>
  z.pipe(
    z
      .string()
      .check(
        z.regex(
          /^#[0-9a-fA-F]{6},#[0-9a-fA-F]{6},#[0-9a-fA-F]{6}$/,
          'must be three #rrggbb colours: foreground,background,cursor',
        ),
      ),
    z.transform((v: string) => {
      const [foreground, background, cursor] = v.split(',') as [string, string, string];
      return { foreground, background, cursor };
    }),
  );

const FLAGS = {
  // The commands' own (`ensure` and `connect` pass the rest on to the daemon they start).
  '--runtime-dir': dir(),
  '--state-dir': dir(),
  '--socket': word(),
  '--start-marker': word(),
  // The daemon's.
  '--idle-exit-ms': positive(),
  '--ring-bytes': positive(),
  '--background-ring-bytes': positive(),
  '--scrollback-rows': positive(),
  '--scrollback-idle-ms': nonNegative(),
  '--credit-window': positive(),
  '--credit-window-max': positive(),
  '--keep-tail': positive(),
  '--pending-cap': positive(),
  '--agent-poll-ms': positive(),
  '--agent-prompt-grace-ms': positive(),
  '--agent-idle-ms': positive(),
  '--max-read-bytes': positive(),
  '--history': onOff(),
  '--history-segment-bytes': positive(),
  '--history-session-bytes': positive(),
  '--history-host-bytes': positive(),
  '--history-free-percent': positive(),
  '--tail-bytes': positive(),
  '--palette': palette(),
};
type FlagName = keyof typeof FLAGS;

const stubFlagsSchema = z.object(
  Object.fromEntries(Object.entries(FLAGS).map(([k, v]) => [k, z.optional(v)])) as {
    [K in FlagName]: z.ZodMiniOptional<(typeof FLAGS)[K]>;
  },
);

/** The flags given, by name, with their values parsed. */
export type StubFlags = z.output<typeof stubFlagsSchema>;

/** Flags the stub commands use themselves (not passed on to the daemon). */
const COMMAND_FLAGS: readonly string[] = ['--runtime-dir', '--socket', '--start-marker', '--state-dir'];

function refused(message: string, flag?: string): PtyRelayError {
  return new PtyRelayError('CONFIG_INVALID', message, flag ? { flag } : undefined);
}

/** Each flag's first value, as given. */
function firstValues(args: readonly string[]): Record<string, string> {
  const values: Record<string, string> = {};
  for (let i = 0; i < args.length; i += 2) {
    const name = args[i]!;
    const value = args[i + 1];
    if (!name.startsWith('--')) throw refused(`unexpected argument ${JSON.stringify(name)}`);
    if (!Object.hasOwn(FLAGS, name)) throw refused(`unknown option ${name}`, name);
    if (value === undefined) throw refused(`${name} needs a value`, name);
    if (!Object.hasOwn(values, name)) values[name] = value;
  }
  return values;
}

/** Parses a command's flags (`args` after the command's name); throws CONFIG_INVALID naming the flag. */
export function parseStubFlags(args: readonly string[]): StubFlags {
  const given = firstValues(args);
  const r = stubFlagsSchema.safeParse(given);
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  const flag = String(issue.path[0]);
  throw refused(`${flag} ${issue.message}, got ${given[flag]}`, flag);
}

/** The daemon's flags among a command's `args` (valid ones: {@link parseStubFlags} has seen them). */
export function daemonFlags(args: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i += 2) {
    if (!COMMAND_FLAGS.includes(args[i]!)) out.push(args[i]!, args[i + 1]!);
  }
  return out;
}
