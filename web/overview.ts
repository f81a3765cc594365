import { fill, h } from './dom.js';
import type { LinkState, TerminalSummary } from './schemas.js';

export interface OverviewModel {
  hosts: Map<string, LinkState>;
  terminals: TerminalSummary[];
  /** Terminal shown right now (its bells are not badged). */
  inView: string | undefined;
  /** Bells already shown per terminal. */
  seenBells: Map<string, number>;
  clientId: string;
}

export interface OverviewActions {
  open(id: string): void;
  create(host?: string): void;
}

/** `12 B/s`, `3.4 KB/s`, `58 MB/s`. */
export function formatRate(bytesPerSec: number): string {
  if (bytesPerSec < 1000) return `${bytesPerSec} B/s`;
  const units = ['KB/s', 'MB/s', 'GB/s'];
  let v = bytesPerSec;
  let u = -1;
  while (v >= 1000 && u < units.length - 1) {
    v /= 1000;
    u++;
  }
  return `${v >= 10 ? Math.round(v) : v.toFixed(1)} ${units[u]}`;
}

export function hostStateText(s: LinkState): string {
  switch (s.state) {
    case 'reconnecting':
      return `reconnecting (attempt ${s.attempt}${s.lastError ? `: ${s.lastError}` : ''})`;
    case 'lost':
      return `lost: ${s.reason}`;
    case 'idle':
      return 'not connected yet';
    default:
      return s.state;
  }
}

/** What a terminal is called: its name, else its title without a /usr/bin/ prefix, then its own id. */
export function displayName(t: Pick<TerminalSummary, 'id' | 'name' | 'title'>): string {
  const text = t.name || t.title.replace(/^\/(?:usr\/)?bin\//, '') || 'terminal';
  return `${text} · ${t.id.slice(t.id.lastIndexOf('/') + 1)}`;
}

/** Short home-relative cwd for the list. */
function shortCwd(cwd: string): string {
  const m = /^\/(?:home\/[^/]+|root)(\/.*)?$/.exec(cwd);
  return m ? `~${m[1] ?? ''}` : cwd;
}

function commandLine(t: TerminalSummary): HTMLElement | undefined {
  const c = t.lastCommand;
  if (!c) return undefined;
  const status = c.running
    ? h('span', { class: 'status running', title: 'running' }, 'running')
    : c.exitCode === undefined
      ? undefined
      : h(
          'span',
          { class: `status ${c.exitCode === 0 ? 'ok' : 'fail'}`, 'data-exit': c.exitCode },
          c.exitCode === 0 ? '✓ 0' : `✗ ${c.exitCode}`,
        );
  return h('div', { class: 'cmd' }, h('code', {}, c.commandLine || '(command)'), status);
}

function terminalRow(t: TerminalSummary, m: OverviewModel, actions: OverviewActions): HTMLElement {
  const unseen = t.id === m.inView ? 0 : t.bells - (m.seenBells.get(t.id) ?? 0);
  const label = displayName(t);
  const active = t.bytesPerSec > 0;
  const exited = t.exitCode !== undefined;
  const mine = t.owner === `client:${m.clientId}`;
  return h(
    'li',
    { class: `term-row${t.id === m.inView ? ' current' : ''}${exited ? ' exited' : ''}`, 'data-id': t.id },
    h(
      'button',
      {
        class: 'term-open',
        type: 'button',
        'data-focus': `row:${t.id}`,
        'aria-label': `Open ${label} on ${t.host}`,
        onclick: () => actions.open(t.id),
      },
      h(
        'div',
        { class: 'term-head' },
        h('span', { class: 'term-title' }, label),
        unseen > 0 &&
          h(
            'span',
            { class: 'bell', title: `${unseen} bell(s)`, 'aria-label': `${unseen} bells` },
            `🔔 ${unseen}`,
          ),
        h(
          'span',
          { class: `activity${active ? ' busy' : ''}`, title: 'output rate', 'data-rate': t.bytesPerSec },
          formatRate(t.bytesPerSec),
        ),
      ),
      h(
        'div',
        { class: 'term-meta' },
        h('span', { class: 'host' }, t.host),
        t.cwd && h('span', { class: 'cwd', title: t.cwd }, shortCwd(t.cwd)),
        exited && h('span', { class: 'status fail' }, `exited ${t.exitCode}`),
        !mine &&
          (t.owner === 'unclaimed'
            ? h(
                'span',
                { class: 'owner', title: 'nobody has claimed it yet: open it to take it' },
                'unclaimed',
              )
            : h('span', { class: 'owner', title: 'claimed by another client: view only' }, t.owner)),
      ),
      commandLine(t),
    ),
  );
}

/** Renders hosts with link state and every terminal of the relay. */
export function renderOverview(root: HTMLElement, m: OverviewModel, actions: OverviewActions): void {
  const hosts = [...m.hosts.entries()].map(([name, s]) =>
    h(
      'li',
      { class: `host-row ${s.state}`, 'data-host': name },
      h('span', { class: 'dot', 'aria-hidden': 'true' }),
      h('span', { class: 'host-name' }, name),
      h('span', { class: 'host-state' }, hostStateText(s)),
      h(
        'button',
        {
          type: 'button',
          class: 'small',
          'data-focus': `new:${name}`,
          'aria-label': `New terminal on ${name}`,
          onclick: () => actions.create(name),
        },
        '+',
      ),
    ),
  );
  const terms = m.terminals.map((t) => terminalRow(t, m, actions));
  fill(
    root,
    h('h2', {}, 'Hosts'),
    h('ul', { class: 'hosts' }, ...hosts),
    h('h2', {}, `Terminals (${m.terminals.length})`),
    terms.length > 0
      ? h('ul', { class: 'terms' }, ...terms)
      : h('p', { class: 'empty' }, 'No terminals yet. Create one with “New terminal”.'),
  );
}
