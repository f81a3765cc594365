import { PtyRelayError } from '../../provider/errors.js';

/**
 * Small validators for the relay config: each names the offending field in its message
 * (`hosts.build1.port must be an integer 1-65535`) and throws CONFIG_INVALID.
 */

export type Obj = Record<string, unknown>;

export function configError(message: string): PtyRelayError {
  return new PtyRelayError('CONFIG_INVALID', message);
}

export function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'object') return 'an object';
  return String(v);
}

/** The object at `field` (or `{}` when absent). */
export function object(v: unknown, field: string): Obj {
  if (v === undefined) return {};
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    throw configError(`${field} must be an object, got ${describe(v)}`);
  }
  return v as Obj;
}

/** Rejects keys not in `known` (catches typos). */
export function onlyKeys(o: Obj, known: readonly string[], field: string): void {
  for (const k of Object.keys(o)) {
    if (!known.includes(k)) {
      throw configError(`${field}.${k} is not a known setting (expected one of: ${known.join(', ')})`);
    }
  }
}

export function optString(o: Obj, key: string, field: string): string | undefined {
  const v = o[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || v.length === 0) {
    throw configError(`${field}.${key} must be a non-empty string, got ${describe(v)}`);
  }
  return v;
}

/**
 * A command as argv: a non-empty array of non-empty strings, the first an absolute path or a name
 * looked up on PATH. It is run without a shell, so no word is ever expanded.
 */
export function optArgv(o: Obj, key: string, field: string): string[] | undefined {
  const v = o[key];
  if (v === undefined) return undefined;
  const ok = Array.isArray(v) && v.length > 0 && v.every((w) => typeof w === 'string' && w.length > 0);
  if (!ok || (v as string[]).some((w) => w.includes('\0'))) {
    throw configError(
      `${field}.${key} must be a command as an array of words, e.g. ["pass", "show", "build1"] (run without a shell), got ${describe(v)}`,
    );
  }
  return v as string[];
}

export function optBoolean(o: Obj, key: string, field: string): boolean | undefined {
  const v = o[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'boolean') throw configError(`${field}.${key} must be true or false, got ${describe(v)}`);
  return v;
}

export function integer(o: Obj, key: string, field: string, min: number, max: number, dflt: number): number;
export function integer(
  o: Obj,
  key: string,
  field: string,
  min: number,
  max: number,
  dflt?: number,
): number | undefined;
export function integer(
  o: Obj,
  key: string,
  field: string,
  min: number,
  max: number,
  dflt?: number,
): number | undefined {
  const v = o[key];
  if (v === undefined) return dflt;
  if (!Number.isInteger(v) || (v as number) < min || (v as number) > max) {
    throw configError(`${field}.${key} must be an integer ${min}-${max}, got ${describe(v)}`);
  }
  return v as number;
}

export function oneOf<T extends string>(
  o: Obj,
  key: string,
  field: string,
  values: readonly T[],
): T | undefined {
  const v = o[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || !values.includes(v as T)) {
    throw configError(`${field}.${key} must be one of ${values.join(', ')}, got ${describe(v)}`);
  }
  return v as T;
}
