import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../../relay/stub-bundle.js';

/**
 * The daemon's first transfer to its model worker (agent-stub/session/screen-model.ts), in fresh
 * node processes running the built module: a function that reads a typed array is optimized, then
 * a buffer is moved through a MessagePort the way the model feeder moves a joined batch. Without
 * the screen-model host, that first detach throws the optimized code away (in the daemon: about 50
 * hot functions at once, in the middle of typing); with the host created first, it stays.
 */
const SCRIPT = `
import { MessageChannel } from 'node:worker_threads';
if (process.argv[1] === 'host') {
  const { ScreenModelHost } = await import(process.env.SCREEN_MODEL_MODULE);
  new ScreenModelHost();
}
const bytes = new Uint8Array(64);
const sum = (n) => { let s = 0; for (let i = 0; i < n; i++) s += bytes[i]; return s; };
%PrepareFunctionForOptimization(sum);
sum(8); sum(16);
%OptimizeFunctionOnNextCall(sum);
sum(32);
const before = %GetOptimizationStatus(sum);
const { port1, port2 } = new MessageChannel();
const batch = new Uint8Array(4096);
port1.postMessage({ data: batch }, [batch.buffer]);
port1.close(); port2.close();
process.stdout.write(JSON.stringify({ before, after: %GetOptimizationStatus(sum), detached: batch.byteLength === 0 }));
`;

/** V8's status bit of a function that runs optimized code. */
const OPTIMIZED = 16;

function run(mode: 'plain' | 'host'): { before: number; after: number; detached: boolean } {
  const out = execFileSync(
    process.execPath,
    ['--allow-natives-syntax', '--input-type=module', '-e', SCRIPT, mode],
    {
      env: {
        ...process.env,
        SCREEN_MODEL_MODULE: join(packageRoot(), 'dist/agent-stub/session/screen-model.js'),
      },
      encoding: 'utf8',
    },
  );
  return JSON.parse(out) as { before: number; after: number; detached: boolean };
}

describe('the first buffer moved to the model worker', () => {
  it('throws optimized typed-array code away in a process that never detached a buffer', () => {
    const r = run('plain');
    expect(r.detached).toBe(true);
    expect(r.before & OPTIMIZED).toBe(OPTIMIZED);
    expect(r.after & OPTIMIZED).toBe(0);
  }, 30_000);

  it('leaves it optimized once the screen-model host settled the detach up front', () => {
    const r = run('host');
    expect(r.detached).toBe(true);
    expect(r.before & OPTIMIZED).toBe(OPTIMIZED);
    expect(r.after & OPTIMIZED).toBe(OPTIMIZED);
  }, 30_000);
});
