import { describe, expect, it } from 'vitest';
import { ActionLog } from '../../relay/ahp/action-log.js';
import { CLOSE_TOO_FAR_BEHIND, PeerSet } from '../../relay/ahp/ahp-peers.js';
import type { ActionEnvelope } from '../../relay/ahp/types.js';
import { STARTUP_GRANT } from '../../relay/core/grant.js';
import type { RpcConnection } from '../../relay/core/rpc-types.js';

/** A connection whose socket buffer the test controls. */
function fakeConn(id: string) {
  const sent: ActionEnvelope[] = [];
  const conn = {
    connectionId: id,
    clientId: 'c',
    bufferedAmount: 0,
    closedWith: undefined as number | undefined,
    state: new Map(),
    grant: STARTUP_GRANT,
    noteInput: () => {},
    notify: (_m: string, p: unknown) => {
      sent.push(p as ActionEnvelope);
    },
    sendBinary: () => {},
    onClose: () => {},
    close(code?: number) {
      this.closedWith = code;
    },
  };
  return { conn, sent };
}

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('PeerSet backpressure', () => {
  it('holds a connection above the high watermark and catches it up in order below the low one', async () => {
    const log = new ActionLog(1000, 1 << 20, 0);
    const peers = new PeerSet(log, { high: 100, low: 10 });
    const { conn, sent } = fakeConn('x');
    const p = peers.add(conn as unknown as RpcConnection);
    p.subscriptions.add('ch');
    const push = (d: string) => peers.deliver(log.append('ch', { type: 'terminal/data', data: d }));
    push('1');
    conn.bufferedAmount = 500; // the socket is backed up
    push('2');
    push('3');
    push('4');
    expect(sent.map((e) => e.serverSeq)).toEqual([1, 2]);
    conn.bufferedAmount = 50; // draining, still above low
    await wait(50);
    expect(sent).toHaveLength(2);
    conn.bufferedAmount = 0;
    await wait(50);
    expect(sent.map((e) => e.serverSeq)).toEqual([1, 2, 3, 4]);
    push('5');
    expect(sent.map((e) => e.serverSeq)).toEqual([1, 2, 3, 4, 5]);
    peers.stop();
  });

  it('closes a connection whose missed envelopes left the log (4008)', async () => {
    const log = new ActionLog(100, 1 << 20, 0);
    const peers = new PeerSet(log, { high: 100, low: 10 });
    const { conn } = fakeConn('y');
    peers.add(conn as unknown as RpcConnection).subscriptions.add('ch');
    conn.bufferedAmount = 500;
    for (let i = 0; i < 300; i++) peers.deliver(log.append('ch', { type: 'terminal/data', data: '.' }));
    conn.bufferedAmount = 0;
    await wait(50);
    expect(conn.closedWith).toBe(CLOSE_TOO_FAR_BEHIND);
    peers.stop();
  });

  it('resynchronizes a connection whose missed envelopes left the log, for its client only', async () => {
    const log = new ActionLog(100, 1 << 20, 0);
    const peers = new PeerSet(log, { high: 100, low: 10 });
    const late = fakeConn('late');
    const other = fakeConn('other');
    other.conn.clientId = 'someone-else';
    peers.add(late.conn as unknown as RpcConnection).subscriptions.add('ch');
    peers.add(other.conn as unknown as RpcConnection).subscriptions.add('ch');
    peers.resync = (p) => [
      log.append('ch', { type: 'terminal/cleared' }, undefined, { onlyClientId: p.clientId }),
      log.append('ch', { type: 'terminal/data', data: 'SCREEN' }, undefined, { onlyClientId: p.clientId }),
    ];
    late.conn.bufferedAmount = 500;
    for (let i = 0; i < 300; i++) peers.deliver(log.append('ch', { type: 'terminal/data', data: '.' }));
    late.conn.bufferedAmount = 0;
    await wait(50);
    expect(late.conn.closedWith).toBeUndefined();
    const tail = late.sent.slice(-2).map((e) => e.action);
    expect(tail).toEqual([{ type: 'terminal/cleared' }, { type: 'terminal/data', data: 'SCREEN' }]);
    // Live again: the next envelope follows the resync.
    peers.deliver(log.append('ch', { type: 'terminal/data', data: 'live' }));
    expect(late.sent.at(-1)?.action).toEqual({ type: 'terminal/data', data: 'live' });
    // The peer that kept up never saw the resync.
    expect(other.sent.some((e) => e.action.type === 'terminal/cleared')).toBe(false);
    expect(other.sent).toHaveLength(301);
    peers.stop();
  });
});
