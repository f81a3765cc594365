import { type ChildProcess, spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serviceFor } from '../support/agent-suite.js';
import { type LocalFixture, startLocal } from '../support/local-daemon.js';

/**
 * Issue 54 item 5, the bounded stress run (not in the default suite: PTYRELAY_STRESS=1). On a
 * loaded machine (STRESS_BURNERS busy loops), `terminal_signal INT` to `python3 -c "input()"`
 * and at once a send of `seq 1 20000 | sed s/^/row-/`, then a read of the newest page: every
 * round must show row-20000 in the send's output and in the read. Before the signal's answer
 * waited for the signal to be taken (agent-stub/session/signal-delivery.ts) 9 of 80 rounds
 * failed here: python3, not yet run since the signal, read the typed command itself.
 *   STRESS_REPS (default 200), STRESS_MS (default 120000), STRESS_BURNERS (default 2)
 */
const env = process.env;
const REPS = Number(env.STRESS_REPS ?? 200);
const BUDGET_MS = Number(env.STRESS_MS ?? 120_000);
const BURNERS = Number(env.STRESS_BURNERS ?? 2);
const LONG = { timeoutMs: 60_000, idleMs: 20_000 };

const stress = env.PTYRELAY_STRESS === '1';
if (!stress)
  console.log(
    'skipped: test/stress runs only with PTYRELAY_STRESS=1 (alone, on a quiet machine; docs/testing.md)',
  );

describe.skipIf(!stress)('interrupt, then send at once (stress)', { timeout: BUDGET_MS + 60_000 }, () => {
  let f: LocalFixture;
  const burners: ChildProcess[] = [];
  beforeAll(async () => {
    f = await startLocal();
    for (let i = 0; i < BURNERS; i++)
      burners.push(spawn('sh', ['-c', 'while :; do :; done'], { stdio: 'ignore' }));
  });
  afterAll(async () => {
    for (const b of burners) b.kill('SIGKILL');
    await f?.cleanup();
  });

  it('every send runs its command and the read right after it shows its last line', async () => {
    const service = serviceFor({ provider: f.provider, host: 'local' });
    const owner = service.owner('stress');
    const t = await service.open(owner, 'local', { command: 'bash', env: { HOME: f.home } });
    await service.send(owner, t.id, '', LONG);
    const started = Date.now();
    const bad: unknown[] = [];
    let reps = 0;
    for (; reps < REPS && Date.now() - started < BUDGET_MS; reps++) {
      const py = await service.send(owner, t.id, 'python3 -c "input()"', LONG);
      await service.signal(owner, t.id, 'INT');
      const r = await service.send(owner, t.id, 'seq 1 20000 | sed s/^/row-/', LONG);
      const page = await service.read(owner, t.id, { count: 5 });
      if (!/^row-20000$/m.test(r.output) || !page.lines.includes('row-20000')) {
        bad.push({ rep: reps, py, send: { ...r, output: r.output.slice(-300) }, read: page.lines });
        await service.send(owner, t.id, '', LONG);
      }
    }
    console.log(`interrupt-then-send: ${reps} rounds, ${bad.length} bad, ${Date.now() - started} ms`);
    await service.dispose({ close: true });
    expect(bad).toEqual([]);
  });
});
