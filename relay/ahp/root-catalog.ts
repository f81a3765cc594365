import type { HostUnavailable } from '../../provider/client/relay-protocol.js';
import type { TerminalRecord, TerminalRegistry } from '../terminals/terminal-registry.js';
import type {
  RootAction,
  RootHostsChangedAction,
  RootState,
  RootTerminalsChangedAction,
  TerminalInfo,
} from './types.js';
import { channelUri } from './uris.js';

/** The catalog entry of one registry record. */
export function terminalInfo(r: TerminalRecord): TerminalInfo {
  const info: TerminalInfo = { resource: channelUri(r.id, r.alias), title: r.title, claim: r.claim };
  if (r.exitCode !== undefined) info.exitCode = r.exitCode;
  return info;
}

/** Pure reducer of the root state (ptyrelay only changes the terminal catalog). */
export function rootReducer(state: RootState, action: RootAction): RootState {
  switch (action.type) {
    case 'root/terminalsChanged':
      return { ...state, terminals: action.terminals };
    case 'root/hostsChanged':
      return { ...state, unavailableHosts: action.unavailableHosts };
    default:
      return state;
  }
}

/**
 * The root channel's state, derived from the shared TerminalRegistry. `refresh()` rebuilds the
 * catalog and returns the `root/terminalsChanged` action to dispatch when it differs from the
 * last one (the catalog is replaced whole), or undefined.
 */
export class RootCatalog {
  private state: RootState = { agents: [], terminals: [], unavailableHosts: [] };
  private lastJson = '[]';

  constructor(
    private readonly registry: TerminalRegistry,
    private readonly hostsDown: () => HostUnavailable[] = () => [],
  ) {
    this.state = { agents: [], terminals: this.build(), unavailableHosts: hostsDown() };
    this.lastJson = JSON.stringify(this.state.terminals);
  }

  /** The action that brings subscribers up to date, if the set of hosts that are down changed. */
  refreshHosts(): RootHostsChangedAction | undefined {
    const unavailableHosts = this.hostsDown();
    if (JSON.stringify(unavailableHosts) === JSON.stringify(this.state.unavailableHosts)) return undefined;
    return { type: 'root/hostsChanged', unavailableHosts };
  }

  private build(): TerminalInfo[] {
    return this.registry
      .list()
      .sort((a, b) => a.createdAt - b.createdAt)
      .map(terminalInfo);
  }

  /** The action that brings subscribers up to date, if the catalog changed. */
  refresh(): RootTerminalsChangedAction | undefined {
    const terminals = this.build();
    const json = JSON.stringify(terminals);
    if (json === this.lastJson) return undefined;
    this.lastJson = json;
    return { type: 'root/terminalsChanged', terminals };
  }

  /** Applies a dispatched root action. */
  apply(action: RootAction): void {
    this.state = rootReducer(this.state, action);
  }

  get current(): RootState {
    return this.state;
  }
}
