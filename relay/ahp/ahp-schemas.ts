import * as z from 'zod/mini';
import { isPtyRelayError } from '../../provider/errors.js';
import { parseMessage } from '../../provider/wire/parse-message.js';
import {
  hostNameSchema,
  MAX_NAME_LENGTH,
  MAX_PATH_LENGTH,
  MAX_TERMINAL_CELLS,
  spawnFields,
} from '../../provider/wire/spawn-schema.js';
import type { Logger } from '../core/log.js';
import type { TerminalClaim } from '../terminals/terminal-registry.js';
import type { TerminalClientAction } from './types.js';
import { MAX_CLIENT_URI_LENGTH } from './uris.js';

/**
 * One schema per AHP message the relay accepts (types.ts has the types, docs/ahp.md the methods):
 * the params of `initialize`, `reconnect`, `subscribe`, `createTerminal`, `disposeTerminal`, the
 * `unsubscribe` and `dispatchAction` notifications, and each client action kind. The relay parses
 * them before acting: a bad field of a request is INVALID_ARGUMENT naming it (`details.field`,
 * e.g. `createTerminal.claim.clientId`); of a notification it is dropped and logged, except a
 * malformed client action, which comes back to its sender rejected with that error as the reason.
 * Unknown fields pass where nothing is kept, and are dropped where the value is stored or
 * broadcast (claims, createTerminal, actions). Same style as provider/client/relay-params.ts, and
 * built on first parse the same way.
 */

/** Most URIs in `initialSubscriptions` or `subscriptions`, and most offered protocol versions. */
export const MAX_URI_LIST = 4096;
/** Longest offered protocol version string (a SemVer is far shorter). */
const MAX_VERSION_LENGTH = 64;
/** Longest `createTerminal` cwd: a path, or a `file://` URI whose escapes may triple it. */
const MAX_CWD_LENGTH = 3 * MAX_PATH_LENGTH + 64;

const text = () => z.string({ error: 'must be a string' });
const bounded = (max: number) =>
  text().check(
    z.maxLength(max, `must be at most ${max} characters`),
    z.refine((s: string) => !s.includes('\0'), 'must not contain NUL'),
  );
const nonEmpty = (max = MAX_NAME_LENGTH) => bounded(max).check(z.minLength(1, 'must not be empty'));
const count = () => z.int({ error: 'must be an integer' }).check(z.minimum(0, 'must be at least 0'));
const flag = () => z.boolean({ error: 'must be true or false' });
const cells = () =>
  z
    .int({ error: `must be an integer 1-${MAX_TERMINAL_CELLS}` })
    .check(
      z.minimum(1, 'must be at least 1'),
      z.maximum(MAX_TERMINAL_CELLS, `must be at most ${MAX_TERMINAL_CELLS}`),
    );
const list = <T extends z.ZodMiniType>(item: T, max = MAX_URI_LIST) =>
  z.array(item, { error: 'must be an array' }).check(z.maxLength(max, `must have at most ${max} entries`));

/** A channel URI: the root, a minted terminal URI or a client-chosen one (uris.ts checks the form where it matters). */
export const uriSchema = z.lazy(() =>
  nonEmpty(MAX_CLIENT_URI_LENGTH).check(
    z.regex(/^[^\x00-\x1f\x7f]*$/, 'must not contain control characters'),
  ),
);

/** AHP TerminalClaim; only its known fields are kept (it is stored and broadcast). */
export const claimSchema: z.ZodMiniType<TerminalClaim> = z.lazy(() =>
  z.discriminatedUnion(
    'kind',
    [
      z.object({ kind: z.literal('client'), clientId: nonEmpty() }),
      z.object({
        kind: z.literal('session'),
        session: nonEmpty(),
        turnId: z.optional(bounded(MAX_NAME_LENGTH)),
        toolCallId: z.optional(bounded(MAX_NAME_LENGTH)),
      }),
    ],
    { error: "must be {kind: 'client', clientId} or {kind: 'session', session}" },
  ),
);

/** The actions a client may dispatch (CLIENT_DISPATCHABLE_TYPES), each with its payload. */
export const clientActionSchema: z.ZodMiniType<TerminalClientAction> = z.lazy(() =>
  z.discriminatedUnion('type', [
    // Keystrokes may hold any character (Ctrl-@ is a NUL); their size is limits.maxInputBytes.
    z.object({ type: z.literal('terminal/input'), data: text() }),
    z.object({ type: z.literal('terminal/resized'), cols: cells(), rows: cells() }),
    z.object({ type: z.literal('terminal/claimed'), claim: claimSchema }),
    z.object({ type: z.literal('terminal/titleChanged'), title: bounded(MAX_NAME_LENGTH) }),
    z.object({ type: z.literal('terminal/cleared') }),
  ]),
);

const params = <S extends z.core.$ZodLooseShape>(shape: S) =>
  z.looseObject(shape, { error: 'must be an object' });

/** Params of each AHP request and notification, keyed by method. */
export const ahpParamsSchemas = {
  initialize: z.lazy(() =>
    params({
      channel: z.optional(uriSchema),
      protocolVersions: list(bounded(MAX_VERSION_LENGTH)),
      clientId: nonEmpty(),
      initialSubscriptions: z.optional(list(uriSchema)),
      capabilities: z.optional(params({ rawData: z.optional(flag()) })),
    }),
  ),
  reconnect: z.lazy(() =>
    params({
      clientId: nonEmpty(),
      lastSeenServerSeq: count(),
      subscriptions: list(uriSchema),
    }),
  ),
  subscribe: z.lazy(() => params({ channel: uriSchema })),
  unsubscribe: z.lazy(() => params({ channel: uriSchema })),
  /** Unknown fields are dropped, not passed on to the provider. */
  createTerminal: z.lazy(() => {
    const spawn = spawnFields();
    return z.object(
      {
        claim: claimSchema,
        channel: z.optional(uriSchema),
        name: spawn.name,
        cwd: z.optional(nonEmpty(MAX_CWD_LENGTH)),
        cols: z.optional(cells()),
        rows: z.optional(cells()),
        host: z.optional(hostNameSchema),
        command: spawn.command,
        args: spawn.args,
      },
      { error: 'must be an object' },
    );
  }),
  disposeTerminal: z.lazy(() => params({ channel: uriSchema })),
  /** The action's payload is parsed by clientActionSchema once its type is one a client may dispatch. */
  dispatchAction: z.lazy(() =>
    params({
      channel: uriSchema,
      clientSeq: count(),
      action: params({ type: nonEmpty() }),
    }),
  ),
};

/**
 * Parses a notification's params with `schema`; a notification has no reply, so a malformed one
 * is logged (naming the field, as parseMessage does) and dropped: undefined.
 */
export function parseNotification<S extends z.ZodMiniType>(
  schema: S,
  value: unknown,
  method: string,
  log: Logger | undefined,
  connectionId: string,
): z.output<S> | undefined {
  try {
    return parseMessage(schema, value, method, 'INVALID_ARGUMENT');
  } catch (err) {
    if (!isPtyRelayError(err)) throw err;
    log?.warn(
      { conn: connectionId, field: err.details?.field, err: err.message },
      `ahp: malformed ${method} dropped`,
    );
    return undefined;
  }
}

/** Parses a dispatched action's payload, or throws INVALID_ARGUMENT (`dispatchAction.action.cols …`). */
export function parseClientAction(action: unknown): TerminalClientAction {
  return parseMessage(clientActionSchema, action, 'dispatchAction.action', 'INVALID_ARGUMENT');
}
