import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BACKGROUND_NICE,
  BACKGROUND_SLICE_NS,
  BACKGROUND_SWEEP_MS,
  sliceAddonPath,
} from '../../provider/background-threads.js';
import {
  DAEMON_MALLOC_ENV,
  daemonProcessEnv,
  restoreUserMallocEnv,
} from '../../provider/daemon-allocator.js';
import { stubBundlePath } from '../../relay/stub-bundle.js';
import { type LocalFixture, OutputCollector, startLocal } from '../support/local-daemon.js';
import { niceOf, sliceOf, slicesUnseen } from '../support/thread-nice.js';

const SLICE_ADDON = sliceAddonPath(dirname(stubBundlePath()));

/** The environment a process started with (glibc read its malloc settings from this). */
function startEnv(pid: number): Map<string, string> {
  const out = new Map<string, string>();
  for (const kv of readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')) {
    const i = kv.indexOf('=');
    if (i > 0) out.set(kv.slice(0, i), kv.slice(i + 1));
  }
  return out;
}

describe('daemon allocator settings (issue 19)', () => {
  it('are saved and restored without touching other variables', () => {
    const [key] = Object.keys(DAEMON_MALLOC_ENV);
    const user = { [key!]: '999', PATH: '/bin', OTHER: 'x' };
    const env = daemonProcessEnv(user);
    for (const [k, v] of Object.entries(DAEMON_MALLOC_ENV)) expect(env[k]).toBe(v);
    restoreUserMallocEnv(env);
    expect(env).toEqual(user);
    // A variable the user did not have is gone again.
    const none = daemonProcessEnv({ PATH: '/bin' });
    restoreUserMallocEnv(none);
    expect(none).toEqual({ PATH: '/bin' });
    // A daemon started without the launcher keeps what it was given.
    const bare: NodeJS.ProcessEnv = { [key!]: '3' };
    restoreUserMallocEnv(bare);
    expect(bare).toEqual({ [key!]: '3' });
  });

  describe('on a real daemon', () => {
    let fx: LocalFixture;
    const saved = process.env.MALLOC_TRIM_THRESHOLD_;
    beforeAll(async () => {
      // The user's own value: the daemon runs with ours, its shells get this one back.
      process.env.MALLOC_TRIM_THRESHOLD_ = '777';
      fx = await startLocal();
    });
    /** Runs `script` in a shell of the daemon, waits for its output to match `expected`, ends it; returns the output. */
    async function shellSays(script: string, expected: string | RegExp): Promise<string> {
      const out = new OutputCollector(fx.provider);
      const r = await fx.provider.spawn({
        cols: 120,
        rows: 24,
        command: 'sh',
        args: ['-c', `${script}; sleep 30`],
        env: { HOME: fx.home },
      });
      out.bind(r.id);
      try {
        return await out.waitText(expected);
      } finally {
        await fx.provider.shutdown(r.id, { immediate: true });
      }
    }
    afterAll(async () => {
      if (saved === undefined) delete process.env.MALLOC_TRIM_THRESHOLD_;
      else process.env.MALLOC_TRIM_THRESHOLD_ = saved;
      await fx.cleanup();
    });

    it('the daemon starts with them, and the shells it spawns do not inherit them', async () => {
      const env = startEnv(fx.daemonPid);
      for (const [k, v] of Object.entries(DAEMON_MALLOC_ENV)) expect(env.get(k)).toBe(v);
      await shellSays(
        // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a template
        'echo "T=${MALLOC_TRIM_THRESHOLD_-unset} S=${PTYRELAY_USER_MALLOC_ENV-unset}"',
        'T=777 S=unset',
      );
    });

    it('its threads but the main one run at a lower priority; the shells it spawns at the user’s own', async () => {
      const pid = fx.daemonPid;
      // The first sweep runs at the daemon's start; threads started since, within a sweep.
      await new Promise((r) => setTimeout(r, BACKGROUND_SWEEP_MS + 200));
      const tids = readdirSync(`/proc/${pid}/task`).map(Number);
      expect(tids.length).toBeGreaterThan(2);
      for (const tid of tids)
        expect(niceOf(`/proc/${pid}/task/${tid}/stat`)).toBe(tid === pid ? 0 : BACKGROUND_NICE);
      // And ask for the long slice (the addon ships beside the stub), the main thread keeping the kernel's default.
      const unseen = existsSync(SLICE_ADDON) ? slicesUnseen() : 'no sched-slice addon built (no C compiler)';
      if (unseen) console.log(`daemon threads' slices not checked: ${unseen}`);
      else
        for (const tid of tids) {
          const ns = sliceOf(`/proc/${pid}/task/${tid}/sched`);
          if (tid === pid) expect(ns).toBeLessThan(BACKGROUND_SLICE_NS);
          else expect(ns).toBe(BACKGROUND_SLICE_NS);
        }
      const line = await shellSays(
        'echo "NICE=$(cut -d" " -f19 /proc/$$/stat) SLICE=$(grep se.slice /proc/$$/sched 2>/dev/null | tr -dc 0-9)"',
        /NICE=\S+ SLICE=\d*\r?\n/,
      );
      expect(line).toContain('NICE=0 ');
      // The shell keeps the kernel's slice too (it forks from the main thread).
      const shellSlice = Number(/SLICE=(\d*)/.exec(line)?.[1] || Number.NaN);
      if (!unseen) expect(shellSlice).toBeLessThan(BACKGROUND_SLICE_NS);
    });

    it("the daemon runs with V8's memory flags (a small young generation, --optimize-for-size), early tier-up, one V8 background thread and a small inlining budget", () => {
      const argv = readFileSync(`/proc/${fx.daemonPid}/cmdline`, 'utf8').split('\0');
      const script = argv.findIndex((a) => a.endsWith('stub.cjs'));
      expect(script).toBeGreaterThan(0);
      expect(argv.slice(1, script)).toEqual([
        '--max-semi-space-size=2',
        '--optimize-for-size',
        '--interrupt-budget=8192',
        '--v8-pool-size=1',
        '--max-inlined-bytecode-size-cumulative=240',
      ]);
    });
  });
});
