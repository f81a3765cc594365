import type { PtyAttachResult } from '../../provider/contract.js';
import { isPtyRelayError } from '../../provider/errors.js';
import type { HostRouter } from '../core/rpc-types.js';
import { claimOfOwner } from '../terminals/host-owners.js';
import type { TerminalClaim, TerminalRegistry } from '../terminals/terminal-registry.js';
import type { AhpHub } from './ahp-hub.js';
import type { URI } from './types.js';
import { channelUri, parseTerminalUri } from './uris.js';

/**
 * Publishes a running terminal this relay has no record of — the relay restarted (on the same or a
 * newer build) while AHP clients were subscribed — so their `reconnect` or `subscribe` finds it
 * under the same URI: its id is its name for life. The channel is seeded with every byte the host
 * still holds (or its screen snapshot when the history outgrew the ring) and claimed by `claim`.
 * A terminal another client adopted first (a RelayClient's re-attach) keeps its record and claim,
 * and its channel, which held only output since then, is rebuilt with the history.
 * Resolves false when the URI names no terminal the host knows.
 */
export async function adoptTerminal(
  hub: AhpHub,
  router: HostRouter,
  registry: TerminalRegistry,
  uri: URI,
  claim: TerminalClaim,
  findAlias?: (uri: URI) => Promise<{ host: string; id: string } | undefined>,
): Promise<boolean> {
  const parsed = parseTerminalUri(uri);
  // A client-chosen URI is an alias the host's daemon keeps with the session.
  const target = parsed ? parsed : await findAlias?.(uri);
  if (!target?.id) return false;
  if (hub.exists(uri) && !hub.channels.get(target.id)?.historyMissing) return true;
  let r: PtyAttachResult;
  try {
    r = await router.providerFor(target.host).attach(target.id, { fromSeq: 0 });
  } catch (err) {
    if (isPtyRelayError(err, 'NOT_FOUND') || isPtyRelayError(err, 'UNKNOWN_HOST')) return false;
    throw err;
  }
  // A terminal has one channel: an aliased one is not reachable by its minted URI.
  if (channelUri(r.id, r.alias) !== uri) return false;
  const known = registry.find(r.id);
  const current = hub.channels.get(r.id);
  // Another AHP client adopted it while the attach was in flight.
  if (known && current && !current.historyMissing) return true;
  // The owner its host holds (claimed through this or another relay) comes before the adopter.
  const hostClaim = claimOfOwner(r.owner);
  if (hostClaim) claim = hostClaim;
  const title = known?.title ?? r.title ?? '';
  const exitCode = known?.exitCode ?? r.exited?.exitCode;
  const ch = hub.openChannel({
    id: r.id,
    incarnationId: r.incarnationId,
    title,
    // One published from its host but not claimed yet is claimed by the client that adopts it.
    claim: known && known.claim.kind !== 'none' ? known.claim : claim,
    cwd: known?.cwd ?? r.cwd,
    cols: known?.cols ?? r.cols,
    rows: known?.rows ?? r.rows,
    exitCode,
    nextSeq: r.providerSequence.value,
    alias: r.alias,
  });
  const replay = r.replay ?? new Uint8Array();
  if (r.snapshot) ch.seed(new TextEncoder().encode(r.snapshot.data), 0);
  // A terminal lost with its host (cold restore): its channel shows the saved screen and scrollback.
  else if (r.sessionExpired && r.coldRestore) ch.seed(new TextEncoder().encode(r.coldRestore.scrollback), 0);
  ch.seed(replay, r.providerSequence.value - replay.length);
  const hostOwner = r.owner !== undefined ? { hostOwner: r.owner } : {};
  if (known) {
    if (known.claim.kind === 'none') registry.update(r.id, { claim, ...hostOwner });
    return hub.exists(uri);
  }
  registry.add({
    id: r.id,
    host: target.host,
    claim,
    title,
    cwd: r.cwd,
    cols: r.cols,
    rows: r.rows,
    exitCode,
    incarnationId: r.incarnationId,
    createdAt: Date.now(),
    alias: r.alias,
    ...hostOwner,
  });
  return hub.exists(uri);
}
