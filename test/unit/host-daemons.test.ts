import { describe, expect, it } from 'vitest';
import { PtyRelayError } from '../../provider/errors.js';
import { HostDaemons } from '../../relay/stub-link/host-daemons.js';
import type { StubClient } from '../../relay/stub-link/stub-client.js';

/** A daemon as HostDaemons sees it: its hello's id scope and the session ids it lists. */
interface FakeDaemon {
  hostScoped: boolean;
  ids: string[];
  gone?: boolean;
}

function setup(daemons: Record<string, FakeDaemon>) {
  const lists: string[] = [];
  const closed: string[] = [];
  const clients = new Map<string, StubClient>();
  /** Link keys reached for a listing (no lasting use of the link: SshPtyProvider.releaseIfEmpty). */
  const listed: string[] = [];
  const reach = async (key: string): Promise<StubClient> => {
    const d = daemons[key];
    if (!d || d.gone) throw new PtyRelayError('DAEMON_UNAVAILABLE', `no daemon ${key}`);
    let c = clients.get(key);
    if (!c) {
      c = {
        daemonHello: {
          t: 'hello',
          protocol: 1,
          buildId: key,
          role: 'stub-daemon',
          ...(d.hostScoped ? { idScope: 'host' } : {}),
        },
        call: async (method: string) => {
          if (d.gone) throw new PtyRelayError('LINK_CLOSED', 'gone');
          if (method !== 'list') throw new Error(method);
          lists.push(key);
          return { sessions: d.ids.map((id) => ({ id, pid: 1, title: '', cols: 80, rows: 24 })) };
        },
      } as unknown as StubClient;
      clients.set(key, c);
      hd.connected(key, c);
    }
    return c;
  };
  const hd: HostDaemons = new HostDaemons({
    defaultHost: () => 'h',
    link: reach,
    listingLink: (key) => {
      listed.push(key);
      return reach(key);
    },
    closeLink: (key) => closed.push(key),
    log: () => undefined,
  });
  return { hd, lists, closed, listed };
}

describe('HostDaemons', () => {
  it('names an older build daemon’s terminals by their own ids and routes them there', async () => {
    const { hd, listed } = setup({
      h: { hostScoped: true, ids: ['pty-3'] },
      'h#old': { hostScoped: true, ids: ['pty-1', 'pty-2'] },
    });
    hd.noteLegacy('h', ['old']);
    expect((await hd.list('h')).map((s) => s.id)).toEqual(['h/pty-3', 'h/pty-1', 'h/pty-2']);
    // A listing reaches each daemon as a listing, not as a use.
    expect(listed).toEqual(['h', 'h#old']);
    expect(hd.resolve('h/pty-1')).toEqual({ host: 'h#old', localId: 'pty-1' });
    expect(hd.resolve('h/pty-3')).toEqual({ host: 'h', localId: 'pty-3' });
    // The old spelling still reaches the old daemon.
    expect(hd.resolve('h/old:pty-2')).toEqual({ host: 'h#old', localId: 'pty-2' });
  });

  it('looks an id it never saw up in one listing shared by concurrent lookups', async () => {
    const { hd, lists } = setup({
      h: { hostScoped: true, ids: [] },
      'h#old': { hostScoped: true, ids: ['pty-7'] },
    });
    await hd.locate('h/pty-0'); // first contact: no older daemons known yet
    hd.noteLegacy('h', ['old']);
    expect(hd.unrouted('h/pty-7')).toBe(true);
    const [a, b] = await Promise.all([hd.locate('h/pty-7'), hd.locate('h/pty-7')]);
    expect(a).toEqual({ host: 'h#old', localId: 'pty-7' });
    expect(b).toEqual(a);
    expect(lists).toEqual(['h', 'h#old']);
    expect(hd.unrouted('h/pty-7')).toBe(false);
    // Known now: no further listing.
    await hd.locate('h/pty-7');
    expect(lists).toHaveLength(2);
  });

  it('keeps the build prefix for daemons without host-wide ids and for an id two daemons claim', async () => {
    const { hd } = setup({
      h: { hostScoped: true, ids: ['pty-1'] },
      'h#pre': { hostScoped: false, ids: ['pty-1'] },
      'h#wiped': { hostScoped: true, ids: ['pty-1', 'pty-9'] },
    });
    hd.noteLegacy('h', ['pre', 'wiped']);
    const ids = (await hd.list('h')).map((s) => s.id);
    expect(ids).toEqual(['h/pty-1', 'h/pre:pty-1', 'h/wiped:pty-1', 'h/pty-9']);
    expect(new Set(ids).size).toBe(ids.length);
    expect(hd.resolve('h/pty-9')).toEqual({ host: 'h#wiped', localId: 'pty-9' });
    expect(hd.resolve('h/pty-1')).toEqual({ host: 'h', localId: 'pty-1' });
    expect(hd.globalId('h#wiped', 'pty-1')).toBe('h/wiped:pty-1');
  });

  it('forgets an older daemon that ended, and its routes', async () => {
    const daemons = { h: { hostScoped: true, ids: [] }, 'h#old': { hostScoped: true, ids: ['pty-4'] } };
    const { hd, closed } = setup(daemons);
    hd.noteLegacy('h', ['old']);
    await hd.list('h');
    expect(hd.resolve('h/pty-4').host).toBe('h#old');
    (daemons['h#old'] as FakeDaemon).gone = true;
    expect((await hd.list('h')).map((s) => s.id)).toEqual([]);
    expect(closed).toEqual(['h#old']);
    expect(hd.resolve('h/pty-4')).toEqual({ host: 'h', localId: 'pty-4' });
    expect(hd.unrouted('h/pty-4')).toBe(false);
  });
});
