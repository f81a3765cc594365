import * as z from 'zod/mini';
import type { AgentCommand, AgentCommandsResult } from '../contract.js';

/**
 * Schemas of a terminal's command records: `commands` (stub link) and `ptyrelay/commands` (relay
 * API), and the record an `agentRead` by `command` carries. Both ends validate: the stub its
 * params, the relay the stub's result and its own params, the client the relay's result.
 * `zod/mini`, like the agent messages (stub bundle size).
 */

/** Records a terminal keeps at most (the oldest go first; ids keep counting). */
export const MAX_COMMAND_RECORDS = 10_000;
/** Records a `commands` call returns unless it asks for another count. */
export const DEFAULT_COMMANDS_COUNT = 100;

const count = () =>
  z
    .int({ error: 'must be an integer' })
    .check(z.minimum(0, 'must be at least 0'), z.maximum(Number.MAX_SAFE_INTEGER, 'is too large'));
const text = () => z.string({ error: 'must be a string' });

/** `c1`, `c2`, … */
export const commandIdSchema = text().check(
  z.regex(/^c[1-9][0-9]{0,15}$/, 'must be a command id such as c3'),
);

export const agentCommandSchema = z.lazy(() =>
  z.object({
    id: commandIdSchema,
    commandLine: text(),
    cwd: z.optional(text()),
    startedAt: count(),
    running: z.boolean({ error: 'must be true or false' }),
    durationMs: z.optional(count()),
    exitCode: z.optional(z.int({ error: 'must be an integer' })),
    lineBegin: z.optional(count()),
    lineEnd: z.optional(count()),
  }),
) satisfies z.ZodMiniType<AgentCommand>;

export const commandsParamsSchema = z.lazy(() =>
  z.object({
    id: text().check(z.minLength(1, 'must not be empty')),
    count: z.optional(
      z
        .int({ error: 'must be an integer' })
        .check(
          z.minimum(1, 'must be at least 1'),
          z.maximum(MAX_COMMAND_RECORDS, `must be at most ${MAX_COMMAND_RECORDS}`),
        ),
    ),
  }),
);
export type CommandsParams = z.infer<typeof commandsParamsSchema>;

export const commandsResultSchema = z.lazy(() =>
  z.object({
    available: z.boolean({ error: 'must be true or false' }),
    commands: z.array(agentCommandSchema, { error: 'must be an array of command records' }),
    total: count(),
  }),
) satisfies z.ZodMiniType<AgentCommandsResult>;
