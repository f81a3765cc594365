import type * as z from 'zod/mini';
import { PtyRelayError } from '../errors.js';

/** Parses `value` with `schema`, or throws `code` naming the first bad field (`what.field: …`). */
export function parseMessage<S extends z.ZodMiniType>(
  schema: S,
  value: unknown,
  what: string,
  code: 'INVALID_ARGUMENT' | 'PROTOCOL_ERROR',
): z.output<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  const field = issue?.path.length ? `${what}.${issue.path.join('.')}` : what;
  throw new PtyRelayError(code, `${field} ${issue?.message ?? 'is invalid'}`, { field });
}
