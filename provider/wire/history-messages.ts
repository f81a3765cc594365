import * as z from 'zod/mini';
import type { StubHistoryPage } from './messages.js';

/**
 * Schemas of `readHistory` (stub link) and `ptyrelay/history` (relay API): a page of a terminal's
 * raw output history. Both ends validate: the stub its params, the relay the stub's page and its
 * own params, the client the relay's page. `zod/mini`, like the agent messages (stub bundle size).
 */

/** Largest page one request may ask for (one frame, one bounded read on the host). */
export const MAX_HISTORY_PAGE_BYTES = 4 * 1024 * 1024;
/** Default page. */
export const DEFAULT_HISTORY_PAGE_BYTES = 1024 * 1024;

const seq = () => z.int({ error: 'must be an integer' }).check(z.minimum(0, 'must be at least 0'));

export const historyParamsSchema = z.lazy(() =>
  z.object({
    id: z.string({ error: 'must be a string' }).check(z.minLength(1, 'must not be empty')),
    fromSeq: z.optional(seq()),
    maxBytes: z.optional(
      z
        .int({ error: 'must be an integer' })
        .check(
          z.minimum(1, 'must be at least 1'),
          z.maximum(MAX_HISTORY_PAGE_BYTES, `must be at most ${MAX_HISTORY_PAGE_BYTES}`),
        ),
    ),
  }),
);

export const historyPageSchema: z.ZodMiniType<StubHistoryPage> = z.lazy(() =>
  z.object({
    fromSeq: seq(),
    bytes: seq(),
    startSeq: seq(),
    headSeq: seq(),
  }),
);

/** The relay's page: the stub's, with the bytes as base64 (JSON-RPC). */
export const relayHistoryPageSchema = z.lazy(() =>
  z.object({
    fromSeq: seq(),
    startSeq: seq(),
    headSeq: seq(),
    data: z.string({ error: 'must be a base64 string' }),
  }),
);
export type RelayHistoryPage = z.infer<typeof relayHistoryPageSchema>;
