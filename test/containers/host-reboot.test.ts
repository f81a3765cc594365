/**
 * A host reboots under a running terminal (`docker restart`: sshd, the stub daemon and the PTYs
 * are killed at once, /tmp and /run are wiped). The relay reconnects and learns the terminal is
 * gone with what the stub had saved of it (coldRestore: last screen, scrollback, cwd, title),
 * every relay that asks gets the same, a new shell opens in the saved cwd, and dismissing the
 * terminal removes its record.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PtyReattachEvent, PtySpawnResult } from '../../provider/contract.js';
import { isPtyRelayError } from '../../provider/errors.js';
import { SshPtyProvider } from '../../relay/ssh/ssh-pty-provider.js';
import { OutputCollector, waitFor } from '../support/local-daemon.js';
import { relayHome } from '../support/ssh-fixture.js';
import { containerEngine, reportSkip } from './support/container-engine.js';
import {
  type HostContainer,
  makeRelayKey,
  REMOTE_RESTORE_DIR,
  REMOTE_RUNTIME_DIR,
  type RelayKey,
  startHost,
} from './support/host-container.js';
import { renderLines } from './support/screen-text.js';

const engine = containerEngine();
reportSkip('host reboot', engine);
const HOST = 'rebooter';
const WORK_DIR = '/home/dev/proj/deep dir';
const TITLE = 'restore-title';
/**
 * Reconnect steps while the machine boots: the default ladder backs off to 10 s and 30 s, which on
 * a slow boot turns a 10 s reboot into a minute of waiting; a steady 1 s keeps the suite short.
 */
const REBOOT_LADDER_MS = [250, 500, 1000];
/**
 * More lines than the record's 2,000 scrollback rows: the first ones are only in the output log,
 * which the restore after the reboot reads.
 */
const LINES = 3000;
const REMOTE_HISTORY_DIR = REMOTE_RESTORE_DIR.replace(/restore$/, 'history');

describe.skipIf(!engine.ok)('a host that reboots under a terminal', () => {
  let key: RelayKey;
  let home: { cleanup(): void };
  let host: HostContainer;
  let provider: SshPtyProvider;
  const providers: SshPtyProvider[] = [];
  const newProvider = () => {
    const p = new SshPtyProvider({
      hosts: { [HOST]: host.ssh },
      daemonArgs: ['--runtime-dir', REMOTE_RUNTIME_DIR],
      link: { ladder: { steps: REBOOT_LADDER_MS } },
    });
    providers.push(p);
    return p;
  };

  beforeAll(async () => {
    if (!engine.ok) return;
    home = relayHome();
    key = makeRelayKey();
    host = await startHost(engine.images.host, key, HOST);
    await host.run(`mkdir -p "${WORK_DIR}"`);
    provider = newProvider();
  }, 120_000);

  afterAll(async () => {
    for (const p of providers) await p.dispose();
    await host?.stop();
    key?.cleanup();
    home?.cleanup();
  }, 60_000);

  it('reports sessionExpired with the saved screen, scrollback, cwd and title; a new shell opens there', async () => {
    const reattached: PtyReattachEvent[] = [];
    provider.onReattach((e) => reattached.push(e));
    const out = new OutputCollector(provider);
    const old: PtySpawnResult = await provider.spawn({ host: HOST, cols: 80, rows: 24, command: 'bash' });
    out.bind(old.id, old.providerSequence.value);
    await provider.write(
      old.id,
      // A plain prompt: Debian's default PS1 would set its own title at every prompt.
      `PS1='$ '; cd "${WORK_DIR}" && printf '\\033]0;${TITLE}\\007' && for i in $(seq 1 ${LINES}); do echo "scroll-line-$i"; done\r`,
    );
    await out.waitText(`scroll-line-${LINES}`, 20_000);

    // The stub saves a changed session every few seconds: wait for the record that has it all.
    const recordFile = await waitFor(
      async () => {
        const text = await host.run(`cat "${REMOTE_RESTORE_DIR}"/*.json 2>/dev/null || true`);
        return text.includes(`scroll-line-${LINES}`) && text.includes(WORK_DIR) && text.includes(TITLE)
          ? host.run(`ls "${REMOTE_RESTORE_DIR}"/*.json`)
          : undefined;
      },
      30_000,
      'the cold-restore record',
    );
    expect(recordFile.trim().split('\n')).toHaveLength(1);
    expect(await host.run(`stat -c %a "${recordFile.trim()}"`)).toBe('600\n');
    expect(await host.run(`stat -c %a "${REMOTE_RESTORE_DIR}"`)).toBe('700\n');
    const saved = JSON.parse(await host.run(`cat "${recordFile.trim()}"`));
    expect(await renderLines(saved.screen, saved.cols, saved.rows)).not.toContain('scroll-line-1');
    const localId = old.id.slice(old.id.lastIndexOf('/') + 1);
    const logOf = () => host.run(`ls -d "${REMOTE_HISTORY_DIR}"/d-*/"${localId}" 2>/dev/null || true`);
    expect(await logOf()).not.toBe('');

    // Power cut: docker kills every process of the machine at once and boots it again.
    await host.container.restart({ timeout: 0 });
    expect(await host.run(`ls -A ${REMOTE_RUNTIME_DIR} 2>/dev/null | wc -l`)).toBe('0\n');

    const expired = await waitFor(
      () => reattached.find((e) => e.id === old.id && e.sessionExpired),
      60_000,
      'the reattach after the reboot',
    );
    expect(expired.incarnationId).toBe(old.incarnationId);
    const cr = expired.coldRestore!;
    expect(cr).toBeDefined();
    expect(cr.cwd).toBe(WORK_DIR);
    expect(cr.lastTitle).toBe(TITLE);
    expect([cr.cols, cr.rows]).toEqual([80, 24]);
    // The saved VT data repaints the last screen and keeps the lines scrolled off above it.
    const lines = await renderLines(cr.scrollback, cr.cols, cr.rows);
    // From the log: more than the record's 2,000 rows; the log is gone once read.
    for (const i of [1, 30, LINES]) expect(lines).toContain(`scroll-line-${i}`);
    expect(await logOf()).toBe('');
    const screen = lines.slice(-cr.rows);
    expect(screen).toContain(`scroll-line-${LINES}`);
    expect(screen).not.toContain('scroll-line-1');

    // An explicit attach says the same, from this relay and from any other one.
    const again = await provider.attach(old.id);
    expect(again.sessionExpired).toBe(true);
    expect(again.coldRestore?.scrollback).toBe(cr.scrollback);
    expect(again.exited).toEqual({ exitCode: 137, signal: 'SIGKILL' });
    const other = newProvider();
    const fromOther = await other.attach(old.id);
    expect(fromOther.sessionExpired).toBe(true);
    expect(fromOther.coldRestore?.cwd).toBe(WORK_DIR);
    const listed = (await other.listProcesses()).find((p) => p.id === old.id);
    expect(listed).toMatchObject({ coldRestored: true, exited: { exitCode: 137 } });

    // A new shell in the saved cwd, under a new id (the restored one stays reserved).
    const fresh = await provider.spawn({ host: HOST, cols: 80, rows: 24, command: 'bash', cwd: cr.cwd });
    expect(fresh.id).not.toBe(old.id);
    const freshOut = new OutputCollector(provider).bind(fresh.id, fresh.providerSequence.value);
    await provider.write(fresh.id, 'echo "cwd=$(pwd)"\r');
    await freshOut.waitText(`cwd=${WORK_DIR}`, 20_000);

    // Dismissing the restored terminal removes its record; a clean shutdown leaves none either.
    await provider.shutdown(old.id);
    const err = await other.attach(old.id).catch((e: unknown) => e);
    expect(isPtyRelayError(err, 'NOT_FOUND'), String(err)).toBe(true);
    await provider.shutdown(fresh.id);
    await waitFor(
      async () => (await host.run(`ls -A "${REMOTE_RESTORE_DIR}" | wc -l`)) === '0\n',
      10_000,
      'no records left',
    );
  }, 180_000);
});
