import { canRead, canSeeHost, type Grant } from '../core/grant.js';
import { type ActionEnvelope, ROOT_URI, type RootState, type Snapshot, type TerminalInfo } from './types.js';
import { parseTerminalUri } from './uris.js';

/**
 * What of the AHP root catalog one token may see: the catalog lists every terminal, so a token
 * limited to some hosts or one terminal gets it filtered (in snapshots and in every
 * `root/terminalsChanged`). Terminal channels need no filter: a token only subscribes to what it
 * may read.
 */

/** True when the token may read every terminal (nothing to filter). */
export function seesEverything(g: Grant): boolean {
  return g.scope === 'admin' || (g.hosts === undefined && g.terminal === undefined);
}

function visible(g: Grant, terminals: TerminalInfo[]): TerminalInfo[] {
  return terminals.filter((t) => {
    const id = parseTerminalUri(t.resource)?.id;
    return id !== undefined && canRead(g, id);
  });
}

/** The envelope as the token may see it (the same object when nothing is hidden). */
export function visibleEnvelope(g: Grant, env: ActionEnvelope): ActionEnvelope {
  if (seesEverything(g) || env.channel !== ROOT_URI) return env;
  if (env.action.type === 'root/hostsChanged') {
    const unavailableHosts = env.action.unavailableHosts.filter((u) => canSeeHost(g, u.host));
    return { ...env, action: { ...env.action, unavailableHosts } };
  }
  if (env.action.type !== 'root/terminalsChanged') return env;
  return { ...env, action: { ...env.action, terminals: visible(g, env.action.terminals) } };
}

/** A snapshot as the token may see it. */
export function visibleSnapshot(g: Grant, snap: Snapshot): Snapshot {
  if (seesEverything(g) || snap.resource !== ROOT_URI) return snap;
  const state = snap.state as RootState; // Not wire data: the relay's own root snapshot.
  const unavailableHosts = state.unavailableHosts.filter((u) => canSeeHost(g, u.host));
  return { ...snap, state: { ...state, terminals: visible(g, state.terminals), unavailableHosts } };
}
