import { fstatSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import * as pty from 'node-pty';
import { describe, expect, it } from 'vitest';
import { NODE_PTY_PINNED, ptyInternals, ptyShapeProblem } from '../../agent-stub/adapters/node-pty.js';

const ROOT = join(import.meta.dirname, '..', '..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
};
const installed = (
  JSON.parse(readFileSync(join(ROOT, 'node_modules', 'node-pty', 'package.json'), 'utf8')) as {
    version: string;
  }
).version;

/**
 * The contract of agent-stub/adapters/node-pty.ts: the installed node-pty is the pinned one and
 * its UnixTerminal still has the private shape the adapter reads. A node-pty of another shape
 * fails here before it reaches a host.
 */
describe('node-pty adapter', () => {
  it('is pinned exactly, and the installed node-pty is that version', () => {
    expect(pkg.dependencies['node-pty']).toBe(NODE_PTY_PINNED);
    expect(installed).toBe(NODE_PTY_PINNED);
  });

  it("reads a live terminal's master fd, write queue, socket and pts path", async () => {
    const proc = pty.spawn('/bin/sh', ['-c', 'read line; echo "got:$line"'], {
      cols: 80,
      rows: 24,
      encoding: null,
    } as pty.IPtyForkOptions);
    try {
      expect(ptyShapeProblem(proc)).toBeUndefined();
      const internals = ptyInternals(proc)!;
      expect(internals).toBeDefined();
      // The master of a PTY: a character device, /dev/ptmx behind the descriptor.
      expect(fstatSync(internals.fd).isCharacterDevice()).toBe(true);
      expect(readlinkSync(`/proc/self/fd/${internals.fd}`)).toBe('/dev/ptmx');
      expect(internals.ptsName).toMatch(/^\/dev\/pts\/\d+$/);
      expect(internals.writeQueue()).toEqual([]);
      expect(typeof internals.socket.destroy).toBe('function');
      // A write node-pty queues shows in the queue the adapter reads until it is done.
      let out = '';
      proc.onData((d) => (out += d.toString()));
      proc.write('hello\r');
      expect(internals.writeQueue().length).toBe(1);
      const code = await new Promise<number>((r) => proc.onExit((e) => r(e.exitCode)));
      expect(code).toBe(0);
      expect(out).toContain('got:hello');
    } finally {
      proc.kill();
    }
  });

  it('says what is missing on an object of another shape, and gives no internals', () => {
    const odd = { pid: 1, write() {} } as unknown as pty.IPty;
    expect(ptyShapeProblem(odd)).toMatch(/fd/);
    expect(ptyInternals(odd)).toBeUndefined();
  });
});
