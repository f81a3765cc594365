import { randomUUID } from 'node:crypto';
import { isPtyRelayError, PtyRelayError } from '../../provider/errors.js';
import type { LspQuery, LspQueryResult } from '../../provider/lsp-seam.js';
import {
  type LspHostConfig,
  lspQueryResultSchema,
  lspRootResultSchema,
} from '../../provider/wire/lsp-messages.js';
import { parseMessage } from '../../provider/wire/parse-message.js';
import type { StubClient } from './stub-client.js';

/** A query's answer may come this much after its deadline (the daemon's own deadline, the link). */
const LSP_REPLY_MARGIN_MS = 10_000;

/** A daemon of an earlier build does not know the `lsp*` requests: LSP_UNSUPPORTED, not a bad argument. */
function unsupported(err: unknown, method: string): unknown {
  if (isPtyRelayError(err, 'INVALID_ARGUMENT') && err.message === `unknown method ${method}`)
    return new PtyRelayError(
      'LSP_UNSUPPORTED',
      `the daemon (an earlier build) does not serve code navigation`,
      {
        method,
      },
    );
  return err;
}

/**
 * One code-navigation query over a stub link, with the host's config. The caller's signal sends
 * `lspCancel` (the daemon's provider then cancels, `$/cancelRequest` for a language server) and
 * fails the call at once with ABORTED. The result is checked against its schema.
 */
export async function lspQueryOver(
  client: StubClient,
  query: LspQuery,
  config: LspHostConfig,
  signal?: AbortSignal,
): Promise<LspQueryResult> {
  if (signal?.aborted) throw new PtyRelayError('ABORTED', `${query.operation} was cancelled by its caller`);
  const queryId = randomUUID();
  const pending = client.call(
    'lspQuery',
    { queryId, query, config },
    config.queryTimeoutMs + LSP_REPLY_MARGIN_MS,
  );
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => {
      client.call('lspCancel', { queryId }).catch(() => {});
      reject(new PtyRelayError('ABORTED', `${query.operation} was cancelled by its caller`));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
  aborted.catch(() => {});
  pending.catch(() => {});
  try {
    const raw = await Promise.race([pending, aborted]);
    return parseMessage(lspQueryResultSchema, raw, 'lspQuery result', 'PROTOCOL_ERROR');
  } catch (err) {
    throw unsupported(err, 'lspQuery');
  } finally {
    if (onAbort) signal?.removeEventListener('abort', onAbort);
  }
}

/** The nearest ancestor of `filePath` on the host that holds `.git`, or null. */
export async function lspRootOver(client: StubClient, filePath: string): Promise<string | null> {
  try {
    const raw = await client.call('lspRoot', { filePath });
    return parseMessage(lspRootResultSchema, raw, 'lspRoot result', 'PROTOCOL_ERROR').root;
  } catch (err) {
    throw unsupported(err, 'lspRoot');
  }
}
