import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  BACKGROUND_NICE,
  BACKGROUND_SLICE_NS,
  BACKGROUND_SWEEP_MS,
  sliceAddonPath,
} from '../../provider/background-threads.js';
import { packageRoot } from '../../relay/stub-bundle.js';
import { niceOf, sliceOf, slicesUnseen } from '../support/thread-nice.js';

/** Nice value of each thread of `pid`, by thread id. */
function threadNice(pid: number): Map<number, number> {
  const out = new Map<number, number>();
  for (const t of readdirSync(`/proc/${pid}/task`)) out.set(Number(t), niceOf(`/proc/${pid}/task/${t}/stat`));
  return out;
}

/**
 * A fresh node process running the built module: it lowers its background threads, then (after a
 * moment) starts a worker thread, which the next sweep must lower too. It prints READY and WORKER.
 */
const CHILD = `
const { Worker } = await import('node:worker_threads');
(await import(process.env.BG_MODULE)).keepBackgroundThreadsLow((p) => console.log('PROBLEM ' + p), process.env.BG_SLICE_ADDON);
console.log('READY');
setTimeout(() => {
  new Worker('setInterval(() => {}, 1000)', { eval: true }).unref();
  console.log('WORKER');
}, 300);
setInterval(() => {}, 1000);
`;

/**
 * A fresh node process that sweeps by hand: twice with the same threads, then after starting a
 * worker. Prints each sweep's result (`null` when it did nothing).
 */
const SWEEPS_CHILD = `
const { Worker } = await import('node:worker_threads');
const sweep = (await import(process.env.BG_MODULE)).createThreadSweep();
const out = [sweep(), sweep()];
new Worker('setInterval(() => {}, 1000)', { eval: true }).unref();
await new Promise((r) => setTimeout(r, 300));
out.push(sweep(), sweep());
console.log(JSON.stringify(out.map((r) => r ?? null)));
process.exit(0);
`;

const ADDON = sliceAddonPath(join(packageRoot(), 'dist', 'stub'));
const linux = existsSync('/proc/self/task');
if (!linux) console.log('background-threads test skipped: no /proc/self/task (not Linux)');

describe.skipIf(!linux)('background threads at a lower priority (provider/background-threads.ts)', () => {
  it('lowers every thread but the main one, and threads started later by the next sweep', async () => {
    const mod = join(packageRoot(), 'dist', 'provider', 'background-threads.js');
    const child = spawn(process.execPath, ['--input-type=module', '-e', CHILD], {
      env: { ...process.env, BG_MODULE: mod, BG_SLICE_ADDON: ADDON },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      let out = '';
      const seen = (word: string) =>
        new Promise<void>((resolve, reject) => {
          const check = () => {
            if (out.includes(word)) resolve();
          };
          child.stdout!.on('data', (d) => {
            out += d;
            check();
          });
          child.once('exit', () => reject(new Error(`child exited before ${word}: ${out}`)));
          check();
        });
      await seen('READY');
      const pid = child.pid!;
      const first = threadNice(pid);
      expect(first.get(pid)).toBe(0);
      const others = [...first].filter(([tid]) => tid !== pid);
      // V8's platform workers at least.
      expect(others.length).toBeGreaterThan(1);
      for (const [, nice] of others) expect(nice).toBe(BACKGROUND_NICE);
      await seen('WORKER');
      const before = new Set(first.keys());
      // The worker's threads start at the main thread's priority; within a sweep they are lowered.
      await new Promise((r) => setTimeout(r, BACKGROUND_SWEEP_MS + 500));
      const later = threadNice(pid);
      const fresh = [...later].filter(([tid]) => !before.has(tid));
      expect(fresh.length).toBeGreaterThan(0);
      for (const [, nice] of fresh) expect(nice).toBe(BACKGROUND_NICE);
      expect(later.get(pid)).toBe(0);
      // No refusal; without the addon, only the notice that the slice stays the default.
      const problems = out.split('\n').filter((l) => l.startsWith('PROBLEM'));
      expect(problems.filter((l) => !(!existsSync(ADDON) && l.includes('default slice')))).toEqual([]);
      const unseen = existsSync(ADDON) ? slicesUnseen() : 'no sched-slice addon built (no C compiler)';
      if (unseen) {
        console.log(`background threads' slices not checked: ${unseen}`);
        return;
      }
      // Every background thread, those started later too, asks for the long slice; the main thread keeps the default.
      for (const t of readdirSync(`/proc/${pid}/task`)) {
        const ns = sliceOf(`/proc/${pid}/task/${t}/sched`);
        if (Number(t) === pid) expect(ns).toBeLessThan(BACKGROUND_SLICE_NS);
        else expect(ns).toBe(BACKGROUND_SLICE_NS);
      }
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('sweeps only when the process has threads it did not have at its last clean sweep', async () => {
    const mod = join(packageRoot(), 'dist', 'provider', 'background-threads.js');
    const child = spawn(process.execPath, ['--input-type=module', '-e', SWEEPS_CHILD], {
      env: { ...process.env, BG_MODULE: mod },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(0);
    const [first, same, afterWorker, sameAgain] = JSON.parse(out) as ({ lowered: number } | null)[];
    // V8's platform workers at least, lowered by the first sweep.
    expect(first?.lowered).toBeGreaterThan(1);
    expect(same).toBeNull();
    // The worker's threads start at the main thread's priority: the next sweep runs and lowers them.
    expect(afterWorker?.lowered).toBeGreaterThan(0);
    expect(sameAgain).toBeNull();
  });
});
