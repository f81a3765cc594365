import { existsSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { daemonSocketPath } from '../../provider/daemon-runtime/stub-paths.js';
import { ErrorCodes } from '../../provider/errors.js';
import { encodeInputFrame, encodeJsonFrame, type Frame, FrameType } from '../../provider/wire/frame-codec.js';
import { FrameDecoder } from '../../provider/wire/frame-decoder.js';
import { STUB_PROTOCOL_VERSION } from '../../provider/wire/messages.js';
import { stubParamsSchemas } from '../../provider/wire/stub-schemas.js';
import { stubBuildId } from '../../relay/core/stub-bundle.js';
import { type LocalFixture, OutputCollector, startLocal, waitFor } from '../support/local-daemon.js';
import { fuzzParams, TEST_TIMEOUT_MS } from './fuzz-options.js';

/** Created only if some string field reached a shell. */
const MARKER = join(tmpdir(), `ptr-stub-fuzz-marker-${process.pid}`);

/** Every request method but `daemonShutdown`, which ends the daemon on purpose (it is a valid request). */
const METHODS = Object.keys(stubParamsSchemas).filter((m) => m !== 'daemonShutdown');

const INJECTIONS = [
  `$(touch ${MARKER})`,
  `\`touch ${MARKER}\``,
  `x; touch ${MARKER}`,
  `x\ntouch ${MARKER}\n`,
  `=touch ${MARKER}`,
  `x\0$(touch ${MARKER})`,
  `A=B; touch ${MARKER}`,
];
const injection = fc.constantFrom(...INJECTIONS);
/** Ids the healthy session never has, so a fuzzed request cannot pause or end it by luck. */
const fuzzId = fc.oneof(
  fc.constantFrom('pty-999999', '', '/', '__proto__', 'constructor', 'local/pty-1', 'x'.repeat(2000)),
  injection,
);
const fuzzString = fc.oneof(
  injection,
  fuzzId,
  fc.string({ unit: 'binary', maxLength: 16 }),
  fc.constantFrom('SIGTERM', 'SIGNOPE', '~', '~/x', '/nonexistent', '/', 'host', 'bash'),
);
const fuzzNumber = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, -1, 1, 80, 4097, 2 ** 31, 2 ** 53, 1e308),
);
const value: fc.Arbitrary<unknown> = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fuzzString,
    fuzzNumber,
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('v'), { maxLength: 3 }),
    fc.dictionary(fuzzString, tie('v'), { maxKeys: 3 }),
  ),
})).v;
const FIELDS = [
  'id',
  'cols',
  'rows',
  'cwd',
  'env',
  'envToDelete',
  'command',
  'args',
  'name',
  'paneKey',
  'requestId',
  'alias',
  'fromSeq',
  'expectedIncarnationId',
  'immediate',
  'deadlineMs',
  'signal',
  'scrollbackRows',
  'background',
  'data',
  'timeoutMs',
  'idleMs',
  'offset',
  'count',
  'maxBytes',
];
/** Programs that never hand their arguments to a shell. */
const command = fc.constantFrom('/bin/echo', 'true', 'nonexistent-cmd-x', `$(touch ${MARKER})`, '', '/');
const paramsArb: fc.Arbitrary<unknown> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .tuple(
        fc.dictionary(fc.constantFrom(...FIELDS), value, { maxKeys: 5 }),
        fc.option(fuzzId, { nil: undefined, freq: 2 }),
        fc.option(command, { nil: undefined }),
        fc.option(fc.array(fuzzString, { maxLength: 3 }), { nil: undefined }),
        fc.option(fc.dictionary(fuzzString, fuzzString, { maxKeys: 2 }), { nil: undefined }),
        fc.option(fc.constantFrom('/tmp', '~', `/tmp/$(touch ${MARKER})`, 'relative', '/tmp\0x'), {
          nil: undefined,
        }),
      )
      .map(([p, id, cmd, args, env, cwd]) => ({
        ...(id !== undefined ? { id } : {}),
        ...p,
        ...(cmd !== undefined ? { command: cmd } : {}),
        ...(args !== undefined ? { args } : {}),
        ...(env !== undefined ? { env } : {}),
        ...(cwd !== undefined ? { cwd } : {}),
      })),
  },
  { weight: 1, arbitrary: value },
);

/** A request (answered by rid), a control message, an input frame or raw bytes. */
type Msg =
  | { kind: 'req'; method: string; params: unknown }
  | { kind: 'json'; message: unknown }
  | { kind: 'input'; id: string; inputSeq: number; data: string }
  | { kind: 'bytes'; bytes: Uint8Array };

const messageArb: fc.Arbitrary<Msg> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant('req' as const),
      method: fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...METHODS) }, fuzzString),
      params: paramsArb,
    }),
  },
  {
    weight: 2,
    arbitrary: fc
      .oneof(
        fc.record({
          t: fc.constantFrom('ack', 'ping', 'goodbye', 'hello', 'req', 'x'),
          id: value,
          seq: value,
          n: value,
        }),
        fc.record({ t: fc.constant('req'), rid: value, method: value, params: value }),
        value,
      )
      .map((message): Msg => ({ kind: 'json', message })),
  },
  {
    weight: 1,
    arbitrary: fc
      .record({ id: fuzzId, inputSeq: fc.nat(), data: fuzzString })
      .filter((m) => Buffer.byteLength(m.id) <= 0xffff)
      .map((m): Msg => ({ kind: 'input', ...m })),
  },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 48 }).map((bytes): Msg => ({ kind: 'bytes', bytes })) },
);

/** A raw connection to the daemon, past its hello, that records every message it gets. */
class RawLink {
  static count = 0;
  readonly got: Record<string, unknown>[] = [];
  closed = false;
  private readonly decoder = new FrameDecoder();

  private constructor(readonly socket: Socket) {
    socket.on('data', (c) => {
      let frames: Frame[];
      try {
        frames = this.decoder.push(c);
      } catch (err) {
        // The daemon sent a frame this build cannot decode: recorded, so the run fails on it.
        this.got.push({ t: 'undecodable', error: String(err) });
        return;
      }
      for (const f of frames)
        if (f.type === FrameType.Json || f.type === FrameType.JsonBlob)
          this.got.push(f.message as Record<string, unknown>);
    });
    socket.on('close', () => {
      this.closed = true;
    });
    socket.on('error', () => undefined); // A reset after a PROTOCOL_ERROR shows as `closed`.
  }

  /** Ends the link now (a later run must not write to it while its close is still on its way). */
  close(): void {
    this.closed = true;
    this.socket.destroy();
  }

  static async open(path: string): Promise<RawLink> {
    const socket = connect(path);
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    const link = new RawLink(socket);
    socket.write(
      encodeJsonFrame({
        t: 'hello',
        protocol: STUB_PROTOCOL_VERSION,
        buildId: 'fuzz',
        role: 'fuzz',
        linkId: `fuzz-${++RawLink.count}`,
      }),
    );
    await waitFor(() => link.got.some((m) => m.t === 'hello'), 5000, 'daemon hello');
    link.got.length = 0;
    return link;
  }
}

function checkError(e: unknown): void {
  expect(e).toMatchObject({ code: expect.any(String), message: expect.any(String) });
  expect(Object.keys(ErrorCodes)).toContain((e as { code: string }).code);
}

describe('fuzz: stub messages against a real daemon', () => {
  let fx: LocalFixture;
  let keep: OutputCollector;
  let healthyId: string;
  let round = 0;

  beforeAll(async () => {
    rmSync(MARKER, { force: true });
    fx = await startLocal();
    keep = new OutputCollector(fx.provider);
    healthyId = (await fx.provider.spawn({ cols: 80, rows: 24, command: 'cat' })).id;
    keep.bind(healthyId);
  });

  afterAll(async () => {
    await fx?.cleanup();
    const ran = existsSync(MARKER);
    rmSync(MARKER, { force: true });
    expect(ran, 'a fuzzed string field was run by a shell').toBe(false);
  });

  async function echoes(): Promise<void> {
    const marker = `stub-fuzz-${++round}`;
    await fx.provider.write(healthyId, `${marker}\n`);
    await keep.waitText(marker);
  }

  it(
    'answers every request with a result or a typed error; garbage closes only its own link; the daemon and a healthy session go on',
    async () => {
      await echoes();
      const path = daemonSocketPath(fx.runtimeDir, stubBuildId());
      let rid = 1;
      await fc.assert(
        fc.asyncProperty(fc.array(messageArb, { minLength: 1, maxLength: 6 }), async (msgs) => {
          // A link per run: what one run did to its link (closed it, left half a frame) stays there.
          const link = await RawLink.open(path);
          try {
            const rids: number[] = [];
            // Raw bytes go last: a stream has no message bounds, so bytes that read as the start of
            // a long frame would swallow what follows them.
            const raw = msgs.some((m) => m.kind === 'bytes');
            const ordered = [
              ...msgs.filter((m) => m.kind !== 'bytes'),
              ...msgs.filter((m) => m.kind === 'bytes'),
            ];
            for (const m of ordered) {
              if (m.kind === 'req') {
                rids.push(rid);
                link.socket.write(
                  encodeJsonFrame({ t: 'req', rid: rid++, method: m.method, params: m.params }),
                );
              } else if (m.kind === 'json') link.socket.write(encodeJsonFrame(m.message));
              else if (m.kind === 'input')
                link.socket.write(encodeInputFrame(m.id, m.inputSeq, Buffer.from(m.data)));
              else link.socket.write(m.bytes);
            }
            const errored = () => link.got.some((g) => g.t === 'error');
            const answered = () => rids.every((r) => link.got.some((g) => g.t === 'res' && g.rid === r));
            await waitFor(
              () => link.closed || errored() || answered(),
              10_000,
              `replies to ${rids.join(',')}`,
            );
            if (!errored() && !raw) {
              // Messages are handled in order: either one before failed the link (its error comes
              // first) or the same link still serves a well-formed request.
              const probe = rid++;
              link.socket.write(encodeJsonFrame({ t: 'req', rid: probe, method: 'daemonInfo', params: {} }));
              await waitFor(
                () => errored() || link.got.some((g) => g.rid === probe),
                10_000,
                `daemonInfo on the same link, or its PROTOCOL_ERROR; got ${JSON.stringify(link.got).slice(0, 400)}, closed ${link.closed}`,
              );
            }
            for (const g of link.got) {
              if (g.t === 'res' && g.error !== undefined) checkError(g.error);
              else if (g.t === 'res') expect(g).toHaveProperty('result');
              else if (g.t === 'error') expect(g.error).toMatchObject({ code: 'PROTOCOL_ERROR' });
              else if (g.t === 'undecodable') expect.fail(String(g.error));
              else if (g.t === 'inputAck')
                for (const f of (g.failed ?? []) as { error: unknown }[]) checkError(f.error);
            }
            // The daemon closes a link only after saying why.
            if (link.closed && !raw) expect(errored(), JSON.stringify(link.got)).toBe(true);
          } finally {
            link.close();
          }
          expect((await fx.provider.daemonInfo()).pid).toBe(fx.daemonPid);
          await echoes();
          expect(existsSync(MARKER), 'a fuzzed string field was run by a shell').toBe(false);
        }),
        fuzzParams('stub messages', { seed: 18_977, runs: 40, longRuns: 3000, timeMs: 5_000 }),
      );
    },
    TEST_TIMEOUT_MS,
  );

  it('a frame over the size limit closes its link with PROTOCOL_ERROR; the healthy session goes on', async () => {
    const link = await RawLink.open(daemonSocketPath(fx.runtimeDir, stubBuildId()));
    // Length prefix 32 MiB + 1 (MAX_FRAME_BYTES): refused from the header, before any body is read.
    const head = Buffer.alloc(5);
    head.writeUInt32BE(32 * 1024 * 1024 + 1, 0);
    link.socket.write(head);
    await waitFor(() => link.closed, 5000, 'oversized frame closes the link');
    expect(link.got.find((g) => g.t === 'error')).toMatchObject({ error: { code: 'PROTOCOL_ERROR' } });
    link.close();
    await echoes();
  });
});
