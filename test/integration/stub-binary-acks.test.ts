import { connect, type Socket } from 'node:net';
import { Duplex } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { daemonSocketPath } from '../../provider/daemon-runtime/stub-paths.js';
import {
  encodeAckFrame,
  encodeInputFrame,
  encodeJsonFrame,
  type Frame,
  FrameType,
} from '../../provider/wire/frame-codec.js';
import { FrameDecoder } from '../../provider/wire/frame-decoder.js';
import { STUB_PROTOCOL_VERSION } from '../../provider/wire/messages.js';
import { stubBuildId } from '../../relay/core/stub-bundle.js';
import { StubClient } from '../../relay/stub-link/stub-client.js';
import { type LocalFixture, OutputCollector, startLocal, waitFor } from '../support/local-daemon.js';

/**
 * Credit and input acknowledgements travel as binary frames (no JSON or schema for every
 * keystroke) between peers whose hellos both say `binaryAcks`; a peer of an older build, whose
 * hello does not, keeps getting JSON. A real daemon on one side, a raw socket on the other.
 */

/** A raw client of the daemon: its hello, then whatever the test sends; every frame received. */
class RawLink {
  readonly frames: Frame[] = [];
  private readonly socket: Socket;
  private readonly decoder = new FrameDecoder();
  private nextRid = 1;
  closed = false;

  constructor(path: string, binaryAcks: boolean) {
    this.socket = connect(path);
    this.socket.on('data', (c) => this.frames.push(...this.decoder.push(c)));
    this.socket.on('close', () => {
      this.closed = true;
    });
    this.socket.write(
      encodeJsonFrame({
        t: 'hello',
        protocol: STUB_PROTOCOL_VERSION,
        buildId: stubBuildId(),
        role: 'test',
        linkId: `raw-${Math.random()}`,
        ...(binaryAcks ? { binaryAcks: true } : {}),
      }),
    );
  }

  send(frame: Uint8Array): void {
    this.socket.write(frame);
  }

  json(t: string): Record<string, unknown>[] {
    return this.frames.flatMap((f) =>
      (f.type === FrameType.Json || f.type === FrameType.JsonBlob) && (f.message as { t?: string }).t === t
        ? [f.message as Record<string, unknown>]
        : [],
    );
  }

  bytesOf(id: string): number {
    return this.frames.reduce(
      (n, f) => n + (f.type === FrameType.Data && f.id === id ? f.data.length : 0),
      0,
    );
  }

  async spawn(command: string, args: string[] = []): Promise<string> {
    const rid = this.nextRid++;
    this.send(
      encodeJsonFrame({ t: 'req', rid, method: 'spawn', params: { cols: 80, rows: 24, command, args } }),
    );
    await waitFor(() => this.json('res').some((m) => m.rid === rid), 10_000);
    const res = this.json('res').find((m) => m.rid === rid) as { result?: { id: string }; error?: unknown };
    if (!res.result) throw new Error(`spawn failed: ${JSON.stringify(res.error)}`);
    return res.result.id;
  }

  close(): void {
    this.socket.destroy();
  }
}

describe('binary acknowledgements on the stub link', () => {
  let fx: LocalFixture;
  let path: string;
  beforeAll(async () => {
    fx = await startLocal();
    path = daemonSocketPath(fx.runtimeDir, stubBuildId());
  });
  afterAll(async () => {
    await fx.cleanup();
  });

  it('the daemon says binaryAcks and acknowledges input in an INPUT_ACK frame to a client that said it too', async () => {
    const link = new RawLink(path, true);
    try {
      await waitFor(() => link.json('hello').length > 0, 10_000);
      expect(link.json('hello')[0]).toMatchObject({ binaryAcks: true });
      const id = await link.spawn('cat');
      link.send(encodeInputFrame(id, 1, Buffer.from('hi\r')));
      await waitFor(() => link.frames.some((f) => f.type === FrameType.InputAck), 10_000);
      expect(link.frames.find((f) => f.type === FrameType.InputAck)).toEqual({
        type: FrameType.InputAck,
        upTo: 1,
      });
      expect(link.json('inputAck')).toEqual([]);
    } finally {
      link.close();
    }
  });

  it('a client of an older build (no binaryAcks in its hello) gets JSON inputAcks and may send JSON acks', async () => {
    const link = new RawLink(path, false);
    try {
      const id = await link.spawn('cat');
      link.send(encodeInputFrame(id, 1, Buffer.from('old\r')));
      await waitFor(() => link.json('inputAck').length > 0, 10_000);
      expect(link.json('inputAck')[0]).toMatchObject({ upTo: 1 });
      expect(link.frames.some((f) => f.type === FrameType.InputAck)).toBe(false);
      link.send(encodeJsonFrame({ t: 'ack', id, seq: 0 }));
      link.send(encodeInputFrame(id, 2, Buffer.from('still\r')));
      await waitFor(() => link.json('inputAck').some((m) => m.upTo === 2), 10_000);
      expect(link.closed).toBe(false);
    } finally {
      link.close();
    }
  });

  it('a binary ack is credit: a flood held at the window goes on once it is acknowledged', async () => {
    const link = new RawLink(path, true);
    try {
      const id = await link.spawn('yes');
      // No credit comes back: the program is held once the link's window is out.
      let held = 0;
      await waitFor(async () => {
        const before = link.bytesOf(id);
        await new Promise((r) => setTimeout(r, 300));
        held = link.bytesOf(id);
        return before > 0 && held === before;
      }, 20_000);
      link.send(encodeAckFrame(id, held));
      await waitFor(() => link.bytesOf(id) > held, 10_000);
      expect(link.bytesOf(id)).toBeGreaterThan(held);
      const rid = 99;
      link.send(encodeJsonFrame({ t: 'req', rid, method: 'shutdown', params: { id, immediate: true } }));
      await waitFor(() => link.json('res').some((m) => m.rid === rid), 10_000);
    } finally {
      link.close();
    }
  });

  it('a malformed binary ack ends that link with PROTOCOL_ERROR; other sessions keep running', async () => {
    const keep = new OutputCollector(fx.provider);
    const alive = await fx.provider.spawn({ cols: 80, rows: 24, command: 'cat' });
    keep.bind(alive.id);
    const link = new RawLink(path, true);
    try {
      await waitFor(() => link.json('hello').length > 0, 10_000);
      const bad = encodeAckFrame('pty-1', 5);
      bad.writeDoubleBE(-1, bad.length - 8);
      link.send(bad);
      await waitFor(() => link.closed, 10_000);
      expect(link.json('error')[0]).toMatchObject({ error: { code: 'PROTOCOL_ERROR' } });
    } finally {
      link.close();
    }
    await fx.provider.write(alive.id, 'after-bad-ack\r');
    await keep.waitText('after-bad-ack');
    await fx.provider.shutdown(alive.id);
  });
});

describe('the relay side of the negotiation', () => {
  /** StubClient against a daemon played by the test: `daemonSaysBinary` decides its hello. */
  async function ackFrameTo(daemonSaysBinary: boolean): Promise<Frame[]> {
    const got: Frame[] = [];
    const decoder = new FrameDecoder();
    const stream = new Duplex({
      read() {},
      write(chunk: Buffer, _enc, cb) {
        got.push(...decoder.push(chunk));
        cb();
      },
    });
    const client = new StubClient(stream, { buildId: 'b', role: 'relay' });
    stream.push(
      encodeJsonFrame({
        t: 'hello',
        protocol: STUB_PROTOCOL_VERSION,
        buildId: 'b',
        role: 'stub-daemon',
        ...(daemonSaysBinary ? { binaryAcks: true } : {}),
      }),
    );
    await client.ready;
    client.ack('pty-4', 1234);
    await new Promise((r) => setImmediate(r));
    client.close();
    return got.filter((f) => f.type !== FrameType.Json || (f.message as { t: string }).t !== 'hello');
  }

  it('sends credit as an ACK frame to a daemon that said binaryAcks, and as JSON to one that did not', async () => {
    expect(await ackFrameTo(true)).toEqual([{ type: FrameType.Ack, id: 'pty-4', seq: 1234 }]);
    expect(await ackFrameTo(false)).toEqual([
      { type: FrameType.Json, message: { t: 'ack', id: 'pty-4', seq: 1234 } },
    ]);
  });
});
