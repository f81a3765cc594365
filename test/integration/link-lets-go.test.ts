import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StubRequestHandler } from '../../agent-stub/daemon/request-handler.js';
import { StubConnection } from '../../agent-stub/daemon/stub-connection.js';
import { StubInputLedgers } from '../../agent-stub/daemon/stub-input-ledgers.js';
import { encodeJsonFrame, FrameType } from '../../provider/wire/frame-codec.js';
import { FrameDecoder } from '../../provider/wire/frame-decoder.js';
import { STUB_PROTOCOL_VERSION } from '../../provider/wire/messages.js';
import { inProcessLoggedSessions } from '../support/in-process-sessions.js';
import { waitFor } from '../support/local-daemon.js';

const MiB = 1024 * 1024;

/** The fields of a reply these tests read. */
interface Reply {
  id?: string;
  generation?: string;
  replayBytes?: number;
}

/** A relay's side of one link: requests by rid, the output text of every terminal, credit for it. */
class TestLink {
  private readonly dec = new FrameDecoder();
  private readonly replies = new Map<number, (m: { result?: Reply; error?: unknown }) => void>();
  private rid = 0;
  text = '';
  /** Stop reading once the next reply is in. */
  stopReading = false;

  constructor(readonly sock: Socket) {
    sock.on('data', (c) => {
      for (const f of this.dec.push(c)) {
        if (f.type === FrameType.Data) {
          this.text += Buffer.from(f.data).toString('latin1');
          // Credit for what was read, as a relay gives it.
          sock.write(encodeJsonFrame({ t: 'ack', id: f.id, seq: f.seq + f.data.length }));
        } else if (f.type === FrameType.Json || f.type === FrameType.JsonBlob) {
          const m = f.message as { t?: string; rid?: number; result?: Reply; error?: unknown };
          if (m.t === 'res' && m.rid !== undefined) {
            this.replies.get(m.rid)?.(m);
            // Reads nothing more from here on: the frames after this one stay in the socket.
            if (this.stopReading) return sock.pause();
          }
        }
      }
    });
    sock.write(
      encodeJsonFrame({
        t: 'hello',
        protocol: STUB_PROTOCOL_VERSION,
        buildId: 'test',
        role: 'test',
        linkId: 'l1',
      }),
    );
  }

  async request(method: string, params: unknown): Promise<Reply> {
    const rid = ++this.rid;
    const reply = new Promise<{ result?: Reply; error?: unknown }>((r) => this.replies.set(rid, r));
    this.sock.write(encodeJsonFrame({ t: 'req', rid, method, params }));
    const m = await reply;
    expect(m.error).toBeUndefined();
    return m.result ?? {};
  }
}

/**
 * A link lives as long as its relay (days), and opens many terminals over its life. Each terminal
 * it shut down used to stay in the link's set of attached terminals, with its RAM tail, its history
 * and its model's handle: 10 terminals held 2.6 MB of tails after a collection, 10 more another
 * 2.6 MB. The daemon's own connection and request handler, in the test's process, over a real
 * socket, with real shells.
 */
describe('a link that shut its terminals down', () => {
  const env = inProcessLoggedSessions('ptr-link-lets-go-', { ringBytes: 1 * MiB, scrollbackRows: 1000 });
  let dir: string;
  let server: Server;
  const conns: StubConnection[] = [];
  const closed: StubConnection[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ptr-link-lets-go-sock-'));
    const handler = new StubRequestHandler(env.registry, {
      info: () => ({
        pid: process.pid,
        buildId: 'test',
        protocol: STUB_PROTOCOL_VERSION,
        sessions: 0,
        connections: 0,
        startedAt: 0,
      }),
      shutdown: () => {},
    });
    const inputs = new StubInputLedgers();
    server = createServer((socket) => {
      conns.push(
        new StubConnection(socket, {
          buildId: 'test',
          handler,
          inputs,
          keepTailMin: 4096,
          pendingCap: 64 * MiB,
          totalBuffered: () => 0,
          log: () => {},
          onSuperseded: () => {},
          onClose: (c) => closed.push(c),
        }),
      );
    });
    await new Promise<void>((r) => server.listen(join(dir, 's'), r));
  });

  afterAll(async () => {
    for (const c of conns) c.close();
    await new Promise((r) => server?.close(r));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('holds none of them: the link lets go of each terminal that is removed', async () => {
    const link = new TestLink(connect(join(dir, 's')));
    await waitFor(() => conns.length === 1, 5000, 'the daemon side of the link');
    const conn = conns[0];
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { id } = await link.request('spawn', {
        cols: 80,
        rows: 24,
        command: 'sh',
        args: ['-c', `seq 1 2000; echo LETGO-${i}; exec sleep 600`],
      });
      ids.push(id as string);
    }
    await waitFor(() => link.text.includes('LETGO-0') && link.text.includes('LETGO-2'), 20_000, 'the output');
    expect(conn.attached.size).toBe(3);
    const sessions = ids.map((id) => env.registry.get(id));
    // Shut down by request, as the relay does: the daemon removes each one from its registry.
    for (const id of ids.slice(0, 2)) await link.request('shutdown', { id, immediate: true });
    expect(conn.attached.size).toBe(1);
    expect([...conn.attached].map((s) => s.id)).toEqual([ids[2]]);
    for (const s of sessions.slice(0, 2)) expect(s.sinkCount).toBe(0);
    // The link itself is fine: it still streams the terminal it kept.
    expect(closed).toEqual([]);
    await link.request('resize', { id: ids[2], cols: 100, rows: 30 });
    await link.request('shutdown', { id: ids[2], immediate: true });
    expect(conn.attached.size).toBe(0);
    link.sock.destroy();
  }, 60_000);

  it('a link still catching up on a removed terminal closes, so that its relay re-attaches', async () => {
    const link = new TestLink(connect(join(dir, 's')));
    await waitFor(() => conns.length === 2, 5000, 'the daemon side of the first link');
    const { id } = await link.request('spawn', {
      cols: 80,
      rows: 24,
      command: 'sh',
      args: ['-c', 'seq 1 400000; echo CAUGHT-UP; exec sleep 600'],
    });
    await waitFor(() => link.text.includes('CAUGHT-UP'), 30_000, 'the output');
    // A second link attaches from seq 0 (out of the RAM tail: read from the log) and reads
    // nothing after the reply, so its catch-up waits on its socket.
    const slow = new TestLink(connect(join(dir, 's')));
    await waitFor(() => conns.length === 3, 5000, 'the daemon side of the second link');
    slow.stopReading = true;
    const attached = await slow.request('attach', { id, fromSeq: 0 });
    // Exact from 0, with nothing in the reply: the bytes come from the log (a catch-up).
    expect(attached).toMatchObject({ generation: 'continued', replayBytes: 0 });
    const catching = conns[2];
    expect(catching.attached.size).toBe(1);
    await link.request('shutdown', { id, immediate: true });
    await waitFor(() => closed.includes(catching), 5000, 'the catching-up link to close');
    expect(catching.attached.size).toBe(0);
    expect(closed).not.toContain(conns[1]);
    link.sock.destroy();
    slow.sock.destroy();
  }, 60_000);
});
