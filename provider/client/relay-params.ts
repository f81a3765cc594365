import * as z from 'zod/mini';
import type { LinkState } from '../contract.js';
import { type ErrorCode, ErrorCodes } from '../errors.js';
import { hostNameSchema, MAX_NAME_LENGTH, MAX_TERMINAL_CELLS, spawnFields } from '../wire/spawn-schema.js';

/**
 * One schema per `ptyrelay/*` request that takes more than a terminal id (relay-protocol.ts has
 * the types; agentSend, agentRead, commands and history have theirs in provider/wire). The relay parses
 * every one before acting, so a field of the wrong type is INVALID_ARGUMENT naming it. Built on
 * first parse, as the stub link's are (provider/wire/stub-schemas.ts).
 */

const text = () => z.string({ error: 'must be a string' });
const nonEmpty = () =>
  text().check(
    z.minLength(1, 'must not be empty'),
    z.maxLength(MAX_NAME_LENGTH, `must be at most ${MAX_NAME_LENGTH} characters`),
  );
const count = () => z.int({ error: 'must be an integer' }).check(z.minimum(0, 'must be at least 0'));
const flag = () => z.boolean({ error: 'must be true or false' });
const cells = () =>
  z
    .int({ error: `must be an integer 1-${MAX_TERMINAL_CELLS}` })
    .check(
      z.minimum(1, 'must be at least 1'),
      z.maximum(MAX_TERMINAL_CELLS, `must be at most ${MAX_TERMINAL_CELLS}`),
    );

export const relayParamsSchemas = {
  hello: z.lazy(() => z.looseObject({ clientId: nonEmpty(), instanceId: z.optional(nonEmpty()) })),
  /** Unknown fields are dropped, not passed on to the provider. */
  spawn: z.lazy(() =>
    z.object({ ...spawnFields(), host: z.optional(hostNameSchema), manualAck: z.optional(flag()) }),
  ),
  attach: z.lazy(() =>
    z.looseObject({
      id: nonEmpty(),
      fromSeq: z.optional(count()),
      expectedIncarnationId: z.optional(text()),
      manualAck: z.optional(flag()),
      background: z.optional(flag()),
    }),
  ),
  ack: z.lazy(() => z.looseObject({ id: nonEmpty(), seq: count() })),
  list: z.lazy(() => z.looseObject({ host: z.optional(hostNameSchema) })),
  resize: z.lazy(() => z.looseObject({ id: nonEmpty(), cols: cells(), rows: cells() })),
  shutdown: z.lazy(() =>
    z.looseObject({ id: nonEmpty(), immediate: z.optional(flag()), deadlineMs: z.optional(count()) }),
  ),
  signal: z.lazy(() => z.looseObject({ id: nonEmpty(), signal: nonEmpty() })),
  snapshot: z.lazy(() => z.looseObject({ id: nonEmpty(), scrollbackRows: z.optional(count()) })),
  setBackgrounded: z.lazy(() => z.looseObject({ id: nonEmpty(), background: z.optional(flag()) })),
};

/** The relay's notifications that RelayClient acts on itself (the stream ones have theirs in client-streams). */
export const relayNotificationSchemas = {
  inputAck: z.lazy(() =>
    z.looseObject({
      upTo: count(),
      failed: z.optional(
        z.array(
          z.looseObject({
            inputSeq: count(),
            error: z.looseObject({
              code: z.catch(z.enum(Object.keys(ErrorCodes) as [ErrorCode, ...ErrorCode[]]), 'PROTOCOL_ERROR'),
              message: text(),
              details: z.optional(z.record(z.string(), z.unknown())),
            }),
          }),
        ),
      ),
    }),
  ),
  linkState: z.lazy(() =>
    z.looseObject({
      host: text(),
      state: z.custom<LinkState>(
        (v) => typeof v === 'object' && v !== null && typeof (v as { state?: unknown }).state === 'string',
        'must be a link state',
      ),
    }),
  ),
  hostProgress: z.lazy(() =>
    z.looseObject({
      host: text(),
      step: text(),
      message: text(),
      bytes: z.optional(count()),
      totalBytes: z.optional(count()),
    }),
  ),
};
