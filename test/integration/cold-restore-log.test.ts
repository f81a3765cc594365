/**
 * Cold restore from the output log (issues 14 and 19), no containers needed: a daemon is killed
 * with SIGKILL together with its PTY; the next daemon on the same state dir keeps the dead
 * session's log through its start-up sweep, rebuilds the restored scrollback from it (lines the
 * record never held), then removes the log. The record also keeps the session's AHP alias, so the
 * restored terminal is listed under it and the alias stays taken until the terminal is dismissed.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PtyReattachEvent } from '../../provider/contract.js';
import { isPtyRelayError } from '../../provider/errors.js';
import { LocalPtyProvider } from '../../relay/local/local-pty-provider.js';
import { type LocalFixture, OutputCollector, startLocal, waitFor } from '../support/local-daemon.js';

const FAST_LINK = { ladder: { steps: [50, 100, 200] } };
/** More than the record's 2,000 scrollback rows, fewer than the log restore's 10,000. */
const LINES = 5000;
const ALIAS = 'ahp-test://restore/log-alias';
const line = (n: number) => `logline-${String(n).padStart(6, '0')}`;

describe('cold restore reads the dead session output log', () => {
  let fx: LocalFixture;
  let provider: LocalPtyProvider;

  beforeAll(async () => {
    fx = await startLocal();
    provider = new LocalPtyProvider({
      runtimeDir: fx.runtimeDir,
      link: FAST_LINK,
      daemonArgs: ['--state-dir', fx.stateDir],
    });
  });

  afterAll(async () => {
    await provider?.dispose();
    await fx?.cleanup();
  });

  const restoreDir = () => join(fx.stateDir, 'restore');
  const records = () => readdirSync(restoreDir()).filter((f) => f.endsWith('.json'));
  const historyDirsOf = (pid: number) =>
    existsSync(join(fx.stateDir, 'history'))
      ? readdirSync(join(fx.stateDir, 'history')).filter((n) => n.startsWith(`d-${pid}-`))
      : [];

  it('restores scrollback from the log, then removes the log; the alias is kept and reported', async () => {
    const reattached: PtyReattachEvent[] = [];
    provider.onReattach?.((e) => reattached.push(e));
    const out = new OutputCollector(provider);
    const old = await provider.spawn({
      cols: 80,
      rows: 24,
      command: 'bash',
      args: ['--norc', '--noprofile'],
      alias: ALIAS,
    });
    out.bind(old.id, old.providerSequence.value);
    await provider.write(
      old.id,
      `PS1='$ '; for i in $(seq 1 ${LINES}); do printf 'logline-%06d\\n' $i; done\r`,
    );
    await out.waitText(line(LINES));
    const file = await waitFor(
      () => {
        const f = records()[0];
        const text = f ? readFileSync(join(restoreDir(), f), 'utf8') : '';
        return text.includes(line(LINES)) ? f : undefined;
      },
      30_000,
      'the record',
    );
    const record = JSON.parse(readFileSync(join(restoreDir(), file), 'utf8'));
    expect(record.alias).toBe(ALIAS);
    // The record's 2,000 rows do not reach the first line: only the log holds it.
    expect(record.screen).not.toContain(line(1));
    expect(historyDirsOf(fx.daemonPid)).toHaveLength(1);

    process.kill(fx.daemonPid, 'SIGKILL');
    process.kill(old.pid, 'SIGKILL');
    const expired = await waitFor(
      () => reattached.find((e) => e.id === old.id && e.sessionExpired),
      30_000,
      'the expiry',
    );
    const scrollback = expired.coldRestore?.scrollback ?? '';
    for (const n of [1, 2, 2500, LINES]) expect(scrollback).toContain(line(n));
    // Every line once, in order.
    const seen = [...scrollback.matchAll(/logline-(\d{6})/g)].map((m) => Number(m[1]));
    expect(seen).toEqual(Array.from({ length: LINES }, (_, i) => i + 1));
    // Consumed: the dead daemon's log is gone, and the rewritten record holds the log's screen.
    expect(historyDirsOf(fx.daemonPid)).toEqual([]);
    expect(readFileSync(join(restoreDir(), file), 'utf8')).toContain(line(1));

    const again = await provider.attach(old.id);
    expect(again).toMatchObject({ sessionExpired: true, alias: ALIAS });
    expect(again.coldRestore?.scrollback).toBe(scrollback);
    expect((await provider.listProcesses()).find((p) => p.id === old.id)).toMatchObject({
      coldRestored: true,
      alias: ALIAS,
    });

    // The alias names the restored terminal until it is dismissed.
    const taken = await provider
      .spawn({ cols: 80, rows: 24, command: 'bash', args: ['--norc'], alias: ALIAS })
      .catch((e: unknown) => e);
    expect(isPtyRelayError(taken, 'ALREADY_EXISTS'), String(taken)).toBe(true);
    await provider.shutdown(old.id);
    const fresh = await provider.spawn({
      cols: 80,
      rows: 24,
      command: 'bash',
      args: ['--norc'],
      alias: ALIAS,
    });
    expect(fresh.alias).toBe(ALIAS);
    await provider.shutdown(fresh.id);
    await waitFor(() => records().length === 0, 10_000, 'no records left');
  }, 120_000);
});
