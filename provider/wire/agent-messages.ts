import * as z from 'zod/mini';
import type { AgentAwaiting, AgentReadResult, AgentSendResult } from '../contract.js';
import { PtyRelayError } from '../errors.js';
import { agentCommandSchema, commandIdSchema } from './command-messages.js';

/**
 * Schemas of the agent requests (`agentSend`, `agentRead`) on the stub link and the relay API
 * (`commands` and the command record: command-messages.ts).
 * Both ends validate: the stub its params, the relay the stub's results. `zod/mini`: the stub is
 * uploaded to every host, and full zod would add 750 KB to its bundle (mini: ~40 KB).
 */

/** Longest wait one send may ask for: a day (a longer job is waited for with further empty sends). */
export const MAX_AGENT_TIMEOUT_MS = 24 * 60 * 60 * 1000;
/** Largest text one send may type (larger input belongs in a file). */
export const MAX_AGENT_SEND_BYTES = 1024 * 1024;
/** Largest page a read may ask for, in lines (the byte bound usually cuts earlier). */
export const MAX_AGENT_READ_LINES = 100_000;
/** Default page of a read (lines). */
export const DEFAULT_AGENT_READ_LINES = 500;

/** Every value of {@link AgentAwaiting}, in the order docs/agents.md lists them. */
export const AGENT_AWAITING = [
  'prompt',
  'password',
  'pager',
  'program',
  'unknown',
] as const satisfies readonly AgentAwaiting[];

const int = (min: number, max: number) =>
  z
    .int({ error: `must be an integer ${min}-${max}` })
    .check(z.minimum(min, `must be at least ${min}`), z.maximum(max, `must be at most ${max}`));
const count = () => int(0, Number.MAX_SAFE_INTEGER);
const text = () => z.string({ error: 'must be a string' });
const flag = () => z.boolean({ error: 'must be true or false' });

export const agentSendParamsSchema = z.lazy(() =>
  z.object({
    id: text().check(z.minLength(1, 'must not be empty')),
    data: text().check(
      z.refine(
        (s: string) => Buffer.byteLength(s) <= MAX_AGENT_SEND_BYTES,
        `must be at most ${MAX_AGENT_SEND_BYTES} bytes`,
      ),
    ),
    timeoutMs: int(1, MAX_AGENT_TIMEOUT_MS),
    idleMs: z.optional(int(1, MAX_AGENT_TIMEOUT_MS)),
  }),
);
export type AgentSendParams = z.infer<typeof agentSendParamsSchema>;

export const agentSendResultSchema = z.lazy(() =>
  z.object({
    reason: z.enum(['stdin_read', 'inferred_idle', 'timeout', 'session_exit'], {
      error: 'must be stdin_read, inferred_idle, timeout or session_exit',
    }),
    output: text(),
    truncated: flag(),
    exitCode: z.optional(z.int({ error: 'must be an integer' })),
    elapsedMs: count(),
    awaiting: z.optional(z.enum(AGENT_AWAITING, { error: `must be one of ${AGENT_AWAITING.join(', ')}` })),
    omittedFromLine: z.optional(count()),
    omittedLines: z.optional(count()),
    commandIds: z.optional(z.array(commandIdSchema, { error: 'must be an array of command ids' })),
  }),
) satisfies z.ZodMiniType<AgentSendResult>;

export const agentReadParamsSchema = z.lazy(() =>
  z.object({
    id: text().check(z.minLength(1, 'must not be empty')),
    offset: z.optional(count()),
    /** Absolute line number in the output log (0: the session's first line); excludes `offset`. */
    from: z.optional(count()),
    count: z.optional(int(1, MAX_AGENT_READ_LINES)),
    /** A command's output (its record's id); `from` then starts the page within it. Excludes `offset`. */
    command: z.optional(commandIdSchema),
  }),
);
export type AgentReadParams = z.infer<typeof agentReadParamsSchema>;

export const agentReadResultSchema = z.lazy(() =>
  z.object({
    lines: z.array(text(), { error: 'must be an array of strings' }),
    lineBegin: count(),
    lineEnd: count(),
    totalLines: count(),
    truncated: flag(),
    logLines: z.optional(count()),
    historyStartLine: z.optional(count()),
    command: z.optional(agentCommandSchema),
  }),
) satisfies z.ZodMiniType<AgentReadResult>;

/** Parses `value` with `schema`, or throws `code` naming the first bad field. */
export function parseWire<T>(
  schema: z.ZodMiniType<T>,
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
