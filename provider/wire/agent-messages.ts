import { z } from 'zod';
import type { AgentReadResult, AgentSendResult } from '../contract.js';
import { PtyRelayError } from '../errors.js';

/**
 * Schemas of the agent requests (`agentSend`, `agentRead`) on the stub link and the relay API.
 * Both ends validate: the stub its params, the relay the stub's results.
 */

/** Longest wait one send may ask for: a day (a longer job is waited for with further empty sends). */
export const MAX_AGENT_TIMEOUT_MS = 24 * 60 * 60 * 1000;
/** Largest text one send may type (larger input belongs in a file). */
export const MAX_AGENT_SEND_BYTES = 1024 * 1024;
/** Largest page a read may ask for, in lines (the byte bound usually cuts earlier). */
export const MAX_AGENT_READ_LINES = 100_000;
/** Default page of a read (lines). */
export const DEFAULT_AGENT_READ_LINES = 500;

const count = z.number().int().nonnegative();

export const agentSendParamsSchema = z.object({
  id: z.string().min(1),
  data: z.string().refine((s) => Buffer.byteLength(s) <= MAX_AGENT_SEND_BYTES, {
    message: `must be at most ${MAX_AGENT_SEND_BYTES} bytes`,
  }),
  timeoutMs: z.number().int().min(1).max(MAX_AGENT_TIMEOUT_MS),
  idleMs: z.number().int().min(1).max(MAX_AGENT_TIMEOUT_MS).optional(),
});
export type AgentSendParams = z.infer<typeof agentSendParamsSchema>;

export const agentSendResultSchema = z.object({
  reason: z.enum(['stdin_read', 'inferred_idle', 'timeout', 'session_exit']),
  output: z.string(),
  truncated: z.boolean(),
  exitCode: z.number().int().optional(),
  elapsedMs: count,
}) satisfies z.ZodType<AgentSendResult>;

export const agentReadParamsSchema = z.object({
  id: z.string().min(1),
  offset: count.optional(),
  count: z.number().int().min(1).max(MAX_AGENT_READ_LINES).optional(),
});
export type AgentReadParams = z.infer<typeof agentReadParamsSchema>;

export const agentReadResultSchema = z.object({
  lines: z.array(z.string()),
  lineBegin: count,
  lineEnd: count,
  totalLines: count,
  truncated: z.boolean(),
}) satisfies z.ZodType<AgentReadResult>;

/** Parses `value` with `schema`, or throws `code` naming the first bad field. */
export function parseWire<T>(
  schema: z.ZodType<T>,
  value: unknown,
  what: string,
  code: 'INVALID_ARGUMENT' | 'PROTOCOL_ERROR' = 'INVALID_ARGUMENT',
): T {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  const field = issue?.path.length ? issue.path.join('.') : what;
  throw new PtyRelayError(code, `${what}: ${field} ${issue?.message ?? 'is invalid'}`);
}
