import * as z from 'zod/mini';
import './zod-messages.js';
import { PtyRelayError } from '../../provider/errors.js';

/**
 * The pieces the relay config's schemas are made of, and the one place a zod issue becomes the
 * CONFIG_INVALID message: the key path, what was expected, what came
 * (`hosts.build1.port must be an integer 1-65535, got 70000`). Each piece's error text says what
 * it expects and what came, so {@link issueText} only puts the key path in front.
 */

export function configError(message: string): PtyRelayError {
  return new PtyRelayError('CONFIG_INVALID', message);
}

/** What came, as a message shows it: strings quoted, objects and arrays by kind only. */
export function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'object') return 'an object';
  return String(v);
}

/** `hosts.build1.port`, `allowedOrigins[0]`; the whole file is `config`. */
function keyPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out || 'config';
}

/**
 * The message of one issue: its key path, then what the schema said. An unknown key is named
 * under its object (`config.listne is not a known setting …`); a message about a whole entry
 * that starts with `:` follows its key path directly (`hosts.a/b: host names may only use …`).
 */
export function issueText(issue: z.core.$ZodIssue): string {
  const at = keyPath(issue.path);
  if (issue.code === 'unrecognized_keys') return `${at}.${issue.keys[0]} ${issue.message}`;
  return issue.message.startsWith(':') ? `${at}${issue.message}` : `${at} ${issue.message}`;
}

/** Parses `raw` with `schema`, or throws CONFIG_INVALID naming the first problem. */
export function parseSettings<S extends z.ZodMiniType>(schema: S, raw: unknown): z.output<S> {
  const r = schema.safeParse(raw);
  if (r.success) return r.data;
  throw configError(issueText(r.error.issues[0]!));
}

/** A relation between settings that does not hold: at `path` (the key at fault), `message`. */
export interface ConfigProblem {
  path: string[];
  message: string;
}

/** Adds an issue about a relation between settings (for a schema's `.check`). */
export function addIssue(payload: z.core.ParsePayload, path: PropertyKey[], message: string): void {
  payload.issues.push({ code: 'custom', input: payload.value, path, message });
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** A JSON object (not null, not an array). */
export function anObject() {
  return z.custom<Record<string, unknown>>(isObject, {
    error: (iss) => `must be an object, got ${describe(iss.input)}`,
  });
}

/**
 * An object of these settings and no others: an unknown key (nearly always a typo) is refused by
 * name before any value is looked at. Absent, a section takes its defaults with `.prefault({})`.
 */
export function settings<T extends z.core.$ZodLooseShape>(shape: T) {
  const known = Object.keys(shape);
  const keysKnown = anObject().check((payload) => {
    const unknown = Object.keys(payload.value).find((k) => !known.includes(k));
    if (unknown === undefined) return;
    payload.issues.push({
      code: 'unrecognized_keys',
      keys: [unknown],
      input: payload.value,
      message: `is not a known setting (expected one of: ${known.join(', ')})`,
    });
  });
  return z.pipe(keysKnown, z.object(shape));
}

/** An integer in [min, max]. */
export function integer(min: number, max: number) {
  const error = (iss: { input?: unknown }) => `must be an integer ${min}-${max}, got ${describe(iss.input)}`;
  return z.int({ error }).check(z.gte(min, { error }), z.lte(max, { error }));
}

/** A non-empty string; `missing` is the message when a required one is absent. */
export function text(missing?: string) {
  const error = (iss: { input?: unknown }) =>
    iss.input === undefined && missing ? missing : `must be a non-empty string, got ${describe(iss.input)}`;
  return z.string({ error }).check(z.minLength(1, { error }));
}

export function bool() {
  return z.boolean({ error: (iss) => `must be true or false, got ${describe(iss.input)}` });
}

export function oneOf<const T extends readonly [string, ...string[]]>(values: T) {
  return z.enum(values, {
    error: (iss) => `must be one of ${values.join(', ')}, got ${describe(iss.input)}`,
  });
}

/**
 * A command as argv: a non-empty array of non-empty strings, the first an absolute path or a name
 * looked up on PATH. It is run without a shell, so no word is ever expanded.
 */
export function argv() {
  const isArgv = (v: unknown) =>
    Array.isArray(v) &&
    v.length > 0 &&
    v.every((w) => typeof w === 'string' && w.length > 0 && !w.includes('\0'));
  return z.custom<string[]>(isArgv, {
    error: (iss) =>
      `must be a command as an array of words, e.g. ["pass", "show", "build1"] (run without a shell), got ${describe(iss.input)}`,
  });
}
