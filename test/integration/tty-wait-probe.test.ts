import * as pty from 'node-pty';
import { afterEach, describe, expect, it } from 'vitest';
import { probeSupported, probeTty, waitsOnTty } from '../../agent-stub/readiness/tty-wait-probe.js';
import { capability, python3Available } from '../support/capabilities.js';
import { waitFor } from '../support/local-daemon.js';

const supported = capability(
  'proc-probe',
  probeSupported() ? undefined : `no /proc tty-wait probe on ${process.platform}/${process.arch}`,
);
const python3 = python3Available();

describe.skipIf(!supported)('the /proc tty-wait probe on real processes', { timeout: 30_000 }, () => {
  const started: pty.IPty[] = [];
  const start = (file: string, args: string[]) => {
    const p = pty.spawn(file, args, { cols: 80, rows: 24, env: process.env as Record<string, string> });
    started.push(p);
    let out = '';
    p.onData((d) => {
      out += d;
    });
    return { p, tty: (p as unknown as { ptsName: string }).ptsName, out: () => out };
  };
  afterEach(() => {
    for (const p of started.splice(0)) p.kill('SIGKILL');
  });

  it('`cat` blocked in read(2) on the tty waits for input', async () => {
    const t = start('cat', []);
    await waitFor(() => waitsOnTty(t.p.pid, t.tty), 5000, 'cat waiting');
    const probe = probeTty(t.p.pid, t.tty)!;
    expect(probe.topIsForeground).toBe(true);
    expect(probe.waits.map((w) => w.pid)).toEqual([t.p.pid]);
    expect(probe.topWaits).toBe(true);
  });

  it('a read on /dev/tty (how ssh, sudo and git ask for passwords) waits for the tty; the group is named', async () => {
    const t = start('bash', ['--norc', '--noprofile', '-c', 'cat /dev/null | (read -r x </dev/tty)']);
    await waitFor(() => (probeTty(t.p.pid, t.tty)?.waits.length ?? 0) > 0, 5000, 'the subshell waiting');
    const probe = probeTty(t.p.pid, t.tty)!;
    expect(probe.waits.map((w) => w.pid)).not.toContain(t.p.pid);
    expect(probe.names[0]).toBe('bash');
    expect(probe.names.length).toBeGreaterThanOrEqual(2);
  });

  it.skipIf(!python3)(
    'a python3 REPL in pselect6 and a node REPL in epoll_wait wait for the tty',
    async () => {
      const py = start('python3', ['-q']);
      await waitFor(() => py.out().includes('>>>'), 10_000, 'python prompt');
      await waitFor(() => waitsOnTty(py.p.pid, py.tty), 5000, 'python waiting');
      const node = start(process.execPath, ['-i']);
      await waitFor(() => node.out().includes('>'), 10_000, 'node prompt');
      await waitFor(() => waitsOnTty(node.p.pid, node.tty), 5000, 'node waiting');
    },
  );

  it.skipIf(!python3)('sleeping, blocking on a socket, or busy: not waiting for the tty', async () => {
    const sleeper = start('sleep', ['30']);
    const server = start('python3', [
      '-c',
      "import socket;s=socket.socket();s.bind(('127.0.0.1',0));s.listen();print('ready',flush=True);s.accept()",
    ]);
    const busy = start('python3', ['-c', 'print("spin", flush=True)\nwhile True: pass']);
    await waitFor(() => server.out().includes('ready') && busy.out().includes('spin'), 10_000, 'programs up');
    await new Promise((r) => setTimeout(r, 200));
    expect(waitsOnTty(sleeper.p.pid, sleeper.tty)).toBe(false);
    expect(waitsOnTty(server.p.pid, server.tty)).toBe(false);
    expect(probeTty(server.p.pid, server.tty)!.waits).toEqual([]);
    expect(probeTty(server.p.pid, server.tty)!.topWaits).toBe(false);
    const spinning = probeTty(busy.p.pid, busy.tty)!;
    expect(spinning.waits).toEqual([]);
    expect(spinning.busy).toBe(true);
    expect(spinning.topWaits).toBe(false);
  });
});
