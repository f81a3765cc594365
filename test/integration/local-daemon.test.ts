import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import xtermHeadless from '@xterm/headless';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectOrStartDaemon } from '../../provider/daemon-runtime/daemon-launcher.js';
import { daemonSocketPath } from '../../provider/daemon-runtime/stub-paths.js';
import { isPtyRelayError } from '../../provider/errors.js';
import { encodeJsonFrame } from '../../provider/wire/frame-codec.js';
import { FrameDecoder } from '../../provider/wire/frame-decoder.js';
import { stubBuildId, stubBundlePath } from '../../relay/core/stub-bundle.js';
import { LocalPtyProvider } from '../../relay/local/local-pty-provider.js';
import { daemonsOf } from '../support/daemon-reaper.js';
import {
  type LocalFixture,
  OutputCollector,
  pidAlive,
  startLocal,
  waitFor,
} from '../support/local-daemon.js';

const ROOT = join(import.meta.dirname, '..', '..');

async function rejectsWith(p: Promise<unknown>, code: string): Promise<string> {
  try {
    await p;
  } catch (err) {
    expect(isPtyRelayError(err)).toBe(true);
    expect((err as { code: string }).code).toBe(code);
    return (err as Error).message;
  }
  throw new Error(`expected ${code}`);
}

const { Terminal } = xtermHeadless;

describe('local daemon', () => {
  let fx: LocalFixture;
  beforeAll(async () => {
    fx = await startLocal([
      ...['--ring-bytes', String(1024 * 1024)],
      // A small output log, so that a 10 MiB flood still outgrows the history.
      ...['--history-session-bytes', String(2 * 1024 * 1024), '--history-segment-bytes', String(256 * 1024)],
    ]);
  });
  afterAll(async () => {
    await fx.cleanup();
  });

  it('lets a second process reattach with exact replay', async () => {
    const out = new OutputCollector(fx.provider);
    const r = await fx.provider.spawn({ cols: 80, rows: 24, command: 'bash', env: { HOME: fx.home } });
    out.bind(r.id);
    await fx.provider.write(r.id, 'for i in $(seq 1 200); do echo line-$i; done\r');
    await out.waitText('line-200\r\n');
    const mark = Math.floor(out.nextSeq / 2);
    const script = `
      import { LocalPtyProvider } from ${JSON.stringify(join(ROOT, 'dist', 'index.js'))};
      const p = new LocalPtyProvider({ runtimeDir: ${JSON.stringify(fx.runtimeDir)} });
      const r = await p.attach(${JSON.stringify(r.id)}, { fromSeq: ${mark} });
      process.stdout.write(JSON.stringify({ gen: r.providerSequence.generation, value: r.providerSequence.value,
        inc: r.incarnationId, replay: Buffer.from(r.replay ?? []).toString('base64'), snapshot: !!r.snapshot }));
      await p.dispose();`;
    const res = JSON.parse(
      execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }),
    );
    expect(res.gen).toBe('continued');
    expect(res.snapshot).toBe(false);
    expect(res.inc).toBe(r.incarnationId);
    // The other process may have seen output (the next prompt) that has not reached us yet.
    await waitFor(() => out.nextSeq >= res.value, 10_000, 'our copy of what the other process saw');
    const expected = out.bytes.subarray(mark, res.value);
    expect(Buffer.from(res.replay, 'base64').equals(expected)).toBe(true);
    expect(res.value).toBeGreaterThanOrEqual(out.nextSeq);
    await fx.provider.shutdown(r.id);
  });

  it('answers a fromSeq that fell out of the history (1 MiB ring, 2 MiB log) with a snapshot and reset', async () => {
    const r = await fx.provider.spawn({
      cols: 80,
      rows: 24,
      command: 'sh',
      args: ['-c', 'head -c 10485760 /dev/zero | tr "\\0" "x"; echo; echo END-OF-FLOOD; sleep 30'],
    });
    const flooded = await waitFor(
      async () => {
        const a = await fx.provider.attach(r.id, { fromSeq: 0 });
        return a.providerSequence.value > 10 * 1024 * 1024 ? a : undefined;
      },
      30_000,
      'the flood to pass 10 MiB',
    );
    expect(flooded.providerSequence.generation).toBe('reset');
    expect(flooded.snapshot).toBeDefined();
    expect(flooded.snapshot!.seq).toBeLessThanOrEqual(flooded.providerSequence.value);
    expect(flooded.snapshot!.seq + (flooded.replay?.length ?? 0)).toBe(flooded.providerSequence.value);
    expect(flooded.snapshot!.data).toContain('xxxxxxxx');
    await fx.provider.shutdown(r.id, { immediate: true });
  });

  it('keeps the model exact through a line flood (the newest 10,000 rows of scrollback)', async () => {
    const out = new OutputCollector(fx.provider);
    const r = await fx.provider.spawn({
      cols: 80,
      rows: 24,
      command: 'sh',
      args: ['-c', 'seq 1 300000; read x'],
    });
    out.bind(r.id);
    await out.waitText('\r\n300000\r\n', 30_000);
    const snap = await fx.provider.getBufferSnapshot(r.id);
    const nums = snap.data
      .split('\r\n')
      .map((l) => l.trim())
      .filter((l) => /^\d+$/.test(l))
      .map(Number);
    expect(nums.at(-1)).toBe(300000);
    expect(nums.length).toBeGreaterThanOrEqual(10_000);
    // Contiguous: no line lost or duplicated inside the retained history.
    for (let i = 1; i < nums.length; i++) expect(nums[i]).toBe(nums[i - 1] + 1);
    await fx.provider.shutdown(r.id, { immediate: true });
  });

  it('keeps colours exact through a coloured line flood (skipped output replays its SGR)', async () => {
    const out = new OutputCollector(fx.provider);
    // Bold once at the start; the colour changes every 1000 lines and lasts until the next change.
    const awk = `awk 'BEGIN { printf "\\033[1m"; for (i = 1; i <= 200000; i++) { if (i % 1000 == 0) printf "\\033[3%dm", (i / 1000) % 8; print i } }'`;
    const r = await fx.provider.spawn({ cols: 80, rows: 24, command: 'sh', args: ['-c', `${awk}; read x`] });
    out.bind(r.id);
    await out.waitText('200000', 30_000);
    const snap = await fx.provider.getBufferSnapshot(r.id);
    const term = new Terminal({ cols: 80, rows: 24, scrollback: 20_000, allowProposedApi: true });
    await new Promise<void>((resolve) => term.write(snap.data, resolve));
    const buf = term.buffer.normal;
    const cell = buf.getNullCell();
    let checked = 0;
    let prev = 0;
    for (let y = 0; y < buf.length; y++) {
      const line = buf.getLine(y)!;
      const text = line.translateToString(true);
      if (!/^\d+$/.test(text)) continue;
      const n = Number(text);
      if (prev) expect(n).toBe(prev + 1);
      prev = n;
      line.getCell(0, cell);
      expect(cell.isBold()).not.toBe(0);
      expect(cell.getFgColor()).toBe(Math.floor(n / 1000) % 8);
      checked++;
    }
    expect(prev).toBe(200000);
    expect(checked).toBeGreaterThanOrEqual(10_000);
    await fx.provider.shutdown(r.id, { immediate: true });
  });

  it('makes one PTY from 20 concurrent spawns with one paneKey', async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, () =>
        fx.provider.spawn({ cols: 80, rows: 24, paneKey: 'pane-A', command: 'cat' }),
      ),
    );
    expect(new Set(results.map((r) => r.id)).size).toBe(1);
    expect(new Set(results.map((r) => r.pid)).size).toBe(1);
    expect(results.filter((r) => !r.reused)).toHaveLength(1);
    const list = await fx.provider.listProcesses();
    expect(list.filter((p) => p.id === results[0].id)).toHaveLength(1);
    const again = await fx.provider.spawn({ cols: 80, rows: 24, requestId: 'req-1', command: 'cat' });
    const retry = await fx.provider.spawn({ cols: 80, rows: 24, requestId: 'req-1', command: 'cat' });
    expect(retry.id).toBe(again.id);
    expect(retry.reused).toBe(true);
    await fx.provider.shutdown(results[0].id);
    await fx.provider.shutdown(again.id);
  });

  it('leaves no process behind after shutdown', async () => {
    const out = new OutputCollector(fx.provider);
    const r = await fx.provider.spawn({ cols: 80, rows: 24, command: 'bash', env: { HOME: fx.home } });
    out.bind(r.id);
    await fx.provider.write(r.id, 'sleep 1001 & sleep 1002 & echo bg-$((1+1)); sleep 1003\r');
    await out.waitText('bg-2');
    const pids = await waitFor(() => {
      const found = execFileSync('pgrep', ['-f', '^sleep 100[123]$'], { encoding: 'utf8' })
        .trim()
        .split('\n');
      return found.length === 3 ? found.map(Number) : undefined;
    });
    await fx.provider.shutdown(r.id, { deadlineMs: 500 });
    expect(pidAlive(r.pid)).toBe(false);
    await waitFor(() => pids.every((p) => !pidAlive(p)), 3000, 'children to die');
    await rejectsWith(fx.provider.attach(r.id), 'NOT_FOUND');
  });

  it('takes a snapshot of a full-screen program with the alternate-screen flag', async () => {
    const out = new OutputCollector(fx.provider);
    const r = await fx.provider.spawn({
      cols: 80,
      rows: 24,
      command: 'less',
      args: [join(ROOT, 'package.json')],
    });
    out.bind(r.id);
    await out.waitText('"name"');
    const snap = await waitFor(async () => {
      const s = await fx.provider.getBufferSnapshot(r.id);
      return s.data.includes('"name": "ptyrelay"') ? s : undefined;
    });
    expect(snap.alternateScreen).toBe(true);
    expect(snap.data).toContain('\x1b[?1049h');
    const attached = await fx.provider.attach(r.id);
    expect(attached.providerSequence.generation).toBe('reset');
    expect(attached.snapshot?.alternateScreen).toBe(true);
    await fx.provider.write(r.id, 'q');
    const after = await waitFor(async () => {
      const s = await fx.provider.getBufferSnapshot(r.id).catch(() => undefined);
      return s && !s.alternateScreen ? s : undefined;
    });
    expect(after.alternateScreen).toBe(false);
  });
});

describe('bad input', () => {
  let fx: LocalFixture;
  beforeAll(async () => {
    fx = await startLocal();
  });
  afterAll(async () => {
    await fx.cleanup();
  });

  it('answers unknown ids, missing cwd and missing commands with typed errors, daemon unharmed', async () => {
    const keep = new OutputCollector(fx.provider);
    const alive = await fx.provider.spawn({ cols: 80, rows: 24, command: 'cat' });
    keep.bind(alive.id);
    await rejectsWith(fx.provider.write('local/pty-999', 'x'), 'NOT_FOUND');
    await rejectsWith(fx.provider.resize('local/pty-999', 10, 10), 'NOT_FOUND');
    await rejectsWith(fx.provider.attach('local/pty-999'), 'NOT_FOUND');
    const cwdMsg = await rejectsWith(
      fx.provider.spawn({ cols: 80, rows: 24, cwd: '/no/such/dir' }),
      'SPAWN_FAILED',
    );
    expect(cwdMsg).toContain('/no/such/dir');
    const cmdMsg = await rejectsWith(
      fx.provider.spawn({ cols: 80, rows: 24, command: 'no-such-command-xyz' }),
      'SPAWN_FAILED',
    );
    expect(cmdMsg).toContain('no-such-command-xyz');
    await rejectsWith(fx.provider.resize(alive.id, 0, -1), 'INVALID_ARGUMENT');
    await rejectsWith(fx.provider.sendSignal(alive.id, 'SIGNOPE'), 'INVALID_ARGUMENT');
    expect(await fx.provider.probePtyLiveness('local/pty-999')).toBe(false);
    await fx.provider.write(alive.id, 'still-here\r');
    await keep.waitText('still-here');
    expect(await fx.provider.probePtyLiveness(alive.id)).toBe(true);
    await fx.provider.shutdown(alive.id);
  });

  it('closes a connection that sends malformed or oversized frames with PROTOCOL_ERROR, others untouched', async () => {
    const keep = new OutputCollector(fx.provider);
    const alive = await fx.provider.spawn({ cols: 80, rows: 24, command: 'cat' });
    keep.bind(alive.id);
    const path = daemonSocketPath(fx.runtimeDir, stubBuildId());
    for (const garbage of [
      Buffer.concat([
        encodeJsonFrame({ t: 'hello', protocol: 1, buildId: 'x', role: 'test' }),
        Buffer.from([0, 0, 0, 3, 1, 123, 0]),
      ]),
      Buffer.from([0x7f, 0xff, 0xff, 0xff, 1, 0, 0]),
      encodeJsonFrame({ t: 'req', rid: 1, method: 'list', params: {} }),
    ]) {
      const s = connect(path);
      const dec = new FrameDecoder();
      const got: unknown[] = [];
      s.on('data', (c) => got.push(...dec.push(c).map((f) => ('message' in f ? f.message : f))));
      s.write(garbage);
      await new Promise<void>((res) => s.on('close', () => res()));
      expect(JSON.stringify(got)).toContain('PROTOCOL_ERROR');
    }
    await fx.provider.write(alive.id, 'after-garbage\r');
    await keep.waitText('after-garbage');
    expect((await fx.provider.daemonInfo()).sessions).toBeGreaterThanOrEqual(1);
    await fx.provider.shutdown(alive.id);
  });
});

describe('daemon lifecycle', () => {
  it('exits after the idle timeout with no sessions and no connections', async () => {
    const fx = await startLocal(['--idle-exit-ms', '300']);
    expect(pidAlive(fx.daemonPid)).toBe(true);
    await fx.provider.dispose();
    await waitFor(() => !pidAlive(fx.daemonPid), 5000, 'idle exit');
    await fx.cleanup();
  });

  it('keeps sessions alive across providers and is reused, not duplicated', async () => {
    const fx = await startLocal();
    const r = await fx.provider.spawn({ cols: 80, rows: 24, command: 'cat' });
    await fx.provider.dispose();
    const second = new LocalPtyProvider({ runtimeDir: fx.runtimeDir });
    expect((await second.daemonInfo()).pid).toBe(fx.daemonPid);
    const list = await second.listProcesses();
    expect(list.map((p) => p.id)).toContain(r.id);
    expect(list.find((p) => p.id === r.id)?.incarnationId).toBe(r.incarnationId);
    await rejectsWith(second.attach(r.id, { expectedIncarnationId: 'other' }), 'INCARNATION_MISMATCH');
    await second.shutdownDaemon();
    await second.dispose();
    await waitFor(() => !pidAlive(fx.daemonPid), 5000, 'daemon exit');
    expect(pidAlive(r.pid)).toBe(false);
    await fx.cleanup();
  });

  it('a daemon a launcher started but another starter beat is ended, not left to take over later', async () => {
    const fx = await startLocal();
    await fx.provider.shutdownDaemon();
    // A node that takes 2 s to boot (a loaded machine): this launcher's daemon comes up late.
    const slowNode = join(fx.runtimeDir, '..', 'slow-node');
    writeFileSync(slowNode, `#!/bin/sh\nsleep 2\nexec ${JSON.stringify(process.execPath)} "$@"\n`, {
      mode: 0o755,
    });
    const slow = connectOrStartDaemon(stubBundlePath(), fx.runtimeDir, [], slowNode);
    await waitFor(() => daemonsOf(fx.runtimeDir).length === 1, 5000, 'the slow start');
    // Meanwhile another starter's daemon comes up first and both launchers connect to it.
    const fast = new LocalPtyProvider({ runtimeDir: fx.runtimeDir });
    const { pid } = await fast.daemonInfo();
    (await slow).destroy();
    // That daemon stops; the late one must not take the runtime dir over with nobody connected.
    await fast.shutdownDaemon();
    await fast.dispose();
    await waitFor(() => !pidAlive(pid), 5000, 'the first daemon exit');
    await waitFor(() => daemonsOf(fx.runtimeDir).length === 0, 10_000, 'no daemon left');
    await new Promise((r) => setTimeout(r, 2500));
    expect(daemonsOf(fx.runtimeDir)).toEqual([]);
    await fx.cleanup();
  });
});

describe('snapshots of a flood that outruns the ring', () => {
  let fx: LocalFixture;
  beforeAll(async () => {
    // A 64 KiB ring is 1 ms of `yes`: a snapshot taken while it runs misses almost always. The
    // ring alone (--history off, as after a full disk): with the log, seq 0 would replay exactly.
    fx = await startLocal([
      ...['--history', 'off'],
      ...['--ring-bytes', String(64 * 1024), '--credit-window', String(16 * 1024)],
      // A read cannot promise more than the ring keeps (the daemon refuses to start otherwise).
      ...['--max-read-bytes', String(64 * 1024)],
    ]);
  });
  afterAll(async () => {
    await fx.cleanup();
  });

  it('still attaches every time: retries hold the program until the snapshot is in', async () => {
    const r = await fx.provider.spawn({ cols: 80, rows: 24, command: 'yes', args: ['flood'] });
    try {
      let last = 0;
      await waitFor(
        async () => (await fx.provider.attach(r.id, { fromSeq: 0 })).providerSequence.value > 1024 * 1024,
        10_000,
        'the flood to pass 1 MiB',
      );
      for (let i = 0; i < 5; i++) {
        // Time for the flood to move on: with a 16 KiB credit window it waits for our acks, and
        // two attaches within a millisecond could report the same seq without anything held.
        if (i > 0) await new Promise((res) => setTimeout(res, 50));
        const a = await fx.provider.attach(r.id, { fromSeq: 0 });
        expect(a.providerSequence.generation).toBe('reset');
        expect(a.snapshot!.data).toContain('flood');
        // The snapshot and the bytes after it meet exactly at the sequence the attach reports.
        expect(a.snapshot!.seq + (a.replay?.length ?? 0)).toBe(a.providerSequence.value);
        expect(a.providerSequence.value).toBeGreaterThan(last);
        last = a.providerSequence.value;
      }
      // The program was only held, never stopped for good: output keeps coming after the attaches.
      await waitFor(
        async () =>
          (await fx.provider.attach(r.id, { fromSeq: 0 })).providerSequence.value > last + 1024 * 1024,
        10_000,
        'output to go on',
      );
    } finally {
      await fx.provider.shutdown(r.id, { immediate: true });
    }
  });
});
