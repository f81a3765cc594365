import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DAEMON_MALLOC_ENV,
  daemonProcessEnv,
  restoreUserMallocEnv,
} from '../../provider/daemon-runtime/daemon-allocator.js';
import { type LocalFixture, OutputCollector, startLocal } from '../support/local-daemon.js';

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
  });
});
