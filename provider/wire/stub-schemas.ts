import * as z from 'zod/mini';
import type { PtyFact, ScreenSnapshot } from '../contract.js';
import { type ErrorCode, ErrorCodes, type PtyRelayErrorShape } from '../errors.js';
import { agentReadParamsSchema, agentSendParamsSchema } from './agent-messages.js';
import { commandsParamsSchema } from './command-messages.js';
import { historyParamsSchema } from './history-messages.js';
import { lspCancelParamsSchema, lspQueryParamsSchema, lspRootParamsSchema } from './lsp-messages.js';
import type { StubMethod } from './messages.js';
import { MAX_TERMINAL_CELLS, stubSpawnParamsSchema, terminalOwnerSchema } from './spawn-schema.js';

/**
 * One schema per message of the stub link (messages.ts has the types): what a daemon accepts from
 * a client (`req` per method, `ack`, `ping`, `goodbye`) and what a relay accepts from a daemon
 * (`res`, `inputAck`, `fact`, `exit`, `bg`, `stopping`). The hello has its own (hello-schema.ts). Unknown
 * fields pass (a newer peer may add some); known ones must have their types. `zod/mini` (bundle).
 * Each schema is built on its first parse (`z.lazy`): a zod schema object costs about 1.4 KB of
 * heap, and an idle relay would otherwise hold hundreds for messages it never receives.
 */

const MAX_ID_LENGTH = 1024;
const id = () =>
  z
    .string({ error: 'must be a string' })
    .check(
      z.minLength(1, 'must not be empty'),
      z.maxLength(MAX_ID_LENGTH, `must be at most ${MAX_ID_LENGTH} characters`),
    );
const count = () => z.int({ error: 'must be an integer' }).check(z.minimum(0, 'must be at least 0'));
const flag = () => z.boolean({ error: 'must be true or false' });
const text = () => z.string({ error: 'must be a string' });
const cells = () =>
  z
    .int({ error: `must be an integer 1-${MAX_TERMINAL_CELLS}` })
    .check(
      z.minimum(1, 'must be at least 1'),
      z.maximum(MAX_TERMINAL_CELLS, `must be at most ${MAX_TERMINAL_CELLS}`),
    );
const byId = z.lazy(() => z.looseObject({ id: id() }));
const none = z.lazy(() => z.looseObject({}));

/** Params of each request method, as the daemon checks them before acting. */
export const stubParamsSchemas = {
  spawn: stubSpawnParamsSchema,
  attach: z.lazy(() =>
    z.looseObject({
      id: id(),
      fromSeq: z.optional(count()),
      expectedIncarnationId: z.optional(text()),
    }),
  ),
  detach: byId,
  resize: z.lazy(() => z.looseObject({ id: id(), cols: cells(), rows: cells() })),
  shutdown: z.lazy(() =>
    z.looseObject({ id: id(), immediate: z.optional(flag()), deadlineMs: z.optional(count()) }),
  ),
  signal: z.lazy(() =>
    z.looseObject({
      id: id(),
      signal: text().check(z.regex(/^SIG[A-Z0-9]+$|^[A-Z0-9]+$/, 'must be a signal name such as SIGINT')),
    }),
  ),
  getCwd: byId,
  getForegroundProcess: byId,
  hasChildProcesses: byId,
  list: none,
  probe: byId,
  snapshot: z.lazy(() => z.looseObject({ id: id(), scrollbackRows: z.optional(count()) })),
  clear: byId,
  pause: byId,
  resume: byId,
  setBackgrounded: z.lazy(() => z.looseObject({ id: id(), background: flag() })),
  daemonInfo: none,
  agentSend: agentSendParamsSchema,
  agentRead: agentReadParamsSchema,
  commands: commandsParamsSchema,
  readHistory: historyParamsSchema,
  daemonShutdown: none,
  agentSeen: z.lazy(() => z.looseObject({ ids: z.array(id()).check(z.maxLength(10_000)), seenAt: count() })),
  claim: z.lazy(() => z.looseObject({ id: id(), owner: terminalOwnerSchema, ifUnowned: z.optional(flag()) })),
  lspQuery: lspQueryParamsSchema,
  lspCancel: lspCancelParamsSchema,
  lspRoot: lspRootParamsSchema,
} satisfies Record<StubMethod, z.ZodMiniType>;

export type StubParams<M extends StubMethod> = z.infer<(typeof stubParamsSchemas)[M]>;

/** A request frame: the params are checked per method (stubParamsSchemas). */
export const requestSchema = z.lazy(() =>
  z.looseObject({
    t: z.literal('req'),
    rid: count(),
    method: z.string({ error: 'must be a string' }),
    params: z.optional(z.unknown()),
  }),
);

/** The control messages a daemon takes from a client besides requests. */
export const clientControlSchema = z.lazy(() =>
  z.discriminatedUnion('t', [
    z.looseObject({ t: z.literal('ack'), id: id(), seq: count() }),
    z.looseObject({ t: z.literal('ping'), n: count() }),
    z.looseObject({ t: z.literal('goodbye') }),
  ]),
);

/** A code this build does not know (a newer peer's) reads as PROTOCOL_ERROR, as PtyRelayError.from does. */
const errorShape: z.ZodMiniType<PtyRelayErrorShape> = z.lazy(() =>
  z.looseObject({
    code: z.catch(z.enum(Object.keys(ErrorCodes) as [ErrorCode, ...ErrorCode[]]), 'PROTOCOL_ERROR'),
    message: text(),
    details: z.optional(z.record(z.string(), z.unknown())),
  }),
);

/** A fact or snapshot is passed on whole; its tag is checked here, its fields where they are used. */
const tagged = <T>() =>
  z.custom<T>(
    (v) => typeof v === 'object' && v !== null && typeof (v as { type?: unknown }).type === 'string',
    'must be an object with a type',
  );
const snapshot = z.custom<ScreenSnapshot>(
  (v) => typeof v === 'object' && v !== null && typeof (v as { seq?: unknown }).seq === 'number',
  'must be a snapshot',
);

/** The messages a relay takes from a daemon besides the hello. */
export const daemonMessageSchemas = {
  res: z.lazy(() =>
    z.looseObject({
      t: z.literal('res'),
      rid: count(),
      result: z.optional(z.unknown()),
      error: z.optional(errorShape),
    }),
  ),
  inputAck: z.lazy(() =>
    z.looseObject({
      t: z.literal('inputAck'),
      upTo: count(),
      failed: z.optional(z.array(z.looseObject({ inputSeq: count(), error: errorShape }))),
    }),
  ),
  fact: z.lazy(() =>
    z.looseObject({
      t: z.literal('fact'),
      id: id(),
      incarnationId: text(),
      seq: count(),
      fact: tagged<PtyFact>(),
    }),
  ),
  exit: z.lazy(() =>
    z.looseObject({
      t: z.literal('exit'),
      id: id(),
      incarnationId: text(),
      exitCode: z.int({ error: 'must be an integer' }),
      signal: z.optional(text()),
      seq: count(),
    }),
  ),
  bg: z.lazy(() =>
    z.looseObject({
      t: z.literal('bg'),
      id: id(),
      incarnationId: text(),
      event: z.discriminatedUnion('type', [
        z.looseObject({
          type: z.literal('backgroundMarker'),
          background: flag(),
          seq: count(),
          snapshot: z.optional(snapshot),
        }),
        z.looseObject({
          type: z.literal('dataGap'),
          droppedBytes: count(),
          fromSeq: count(),
          toSeq: count(),
        }),
        z.looseObject({
          type: z.literal('fact'),
          seq: count(),
          fact: tagged<PtyFact | { type: 'exit'; exitCode: number; signal?: string }>(),
        }),
      ]),
    }),
  ),
  error: z.lazy(() => z.looseObject({ t: z.literal('error'), error: errorShape })),
  stopping: z.lazy(() => z.looseObject({ t: z.literal('stopping') })),
};
