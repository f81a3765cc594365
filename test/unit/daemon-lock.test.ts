import { spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  acquirePidLock,
  releasePidLock,
  UNREADABLE_LOCK_STALE_MS,
} from '../../agent-stub/daemon/daemon-lock.js';
import { identityAlive, processIdentity } from '../../agent-stub/restore/process-identity.js';

/** The built module (npm test builds first): child processes race on one lock with it. */
const BUILT_LOCK = join(import.meta.dirname, '..', '..', 'dist', 'agent-stub', 'daemon', 'daemon-lock.js');
/** Processes racing for one lock. */
const RACERS = 6;

let dir: string;
let lock: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ptr-lock-'));
  lock = join(dir, 'stub.lock');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A pid that no process has any more. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {
    encoding: 'utf8',
  });
  return Number(r.stdout);
}

/**
 * Starts RACERS processes at once on `lock`; resolves with how many got it. A winner holds the
 * lock until every racer has answered (its stdin closes), so no one can win after a release.
 */
async function race(): Promise<number> {
  const script = `const m = await import(${JSON.stringify(BUILT_LOCK)});
const got = m.acquirePidLock(${JSON.stringify(lock)});
process.stdout.write(got ? 'won' : 'lost');
process.stdin.resume();
process.stdin.on('end', () => { if (got) m.releasePidLock(${JSON.stringify(lock)}); });`;
  const children = Array.from({ length: RACERS }, () =>
    spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['pipe', 'pipe', 'inherit'] }),
  );
  const answers = await Promise.all(
    children.map((c) => new Promise<string>((resolve) => c.stdout.once('data', (d) => resolve(String(d))))),
  );
  await Promise.all(
    children.map((c) => {
      c.stdin.end();
      return new Promise((resolve) => c.once('close', resolve));
    }),
  );
  return answers.filter((r) => r === 'won').length;
}

describe('daemon pid lock', () => {
  it('is created with pid and start time already in it, and released only by its owner', () => {
    expect(acquirePidLock(lock)).toBe(true);
    expect(readFileSync(lock, 'utf8')).toBe(processIdentity(process.pid));
    expect(readFileSync(lock, 'utf8')).toMatch(/^\d+:\d+$/);
    expect(readdirSync(dir)).toEqual(['stub.lock']);
    releasePidLock(lock);
    expect(existsSync(lock)).toBe(false);
    writeFileSync(lock, '1');
    releasePidLock(lock);
    expect(existsSync(lock)).toBe(true);
    // Our pid with another start time (an earlier boot's process) is not ours to release.
    writeFileSync(lock, `${process.pid}:1`);
    releasePidLock(lock);
    expect(existsSync(lock)).toBe(true);
  });

  it('a half-written lock (no pid yet) is held, not treated as pid 0 and unlinked', () => {
    writeFileSync(lock, '');
    expect(acquirePidLock(lock)).toBe(false);
    expect(readFileSync(lock, 'utf8')).toBe('');
    writeFileSync(lock, '0');
    expect(acquirePidLock(lock)).toBe(false);
    expect(readFileSync(lock, 'utf8')).toBe('0');
  });

  it('an unreadable lock older than its writer could take is stale and taken over', () => {
    writeFileSync(lock, '');
    const old = (Date.now() - UNREADABLE_LOCK_STALE_MS - 1000) / 1000;
    utimesSync(lock, old, old);
    expect(acquirePidLock(lock)).toBe(true);
    expect(readFileSync(lock, 'utf8')).toBe(processIdentity(process.pid));
  });

  it("a dead owner's lock is taken over; a live owner's is not (bare pids of older builds too)", () => {
    writeFileSync(lock, String(deadPid()));
    expect(acquirePidLock(lock)).toBe(true);
    expect(readFileSync(lock, 'utf8')).toBe(processIdentity(process.pid));
    writeFileSync(lock, String(process.ppid));
    expect(acquirePidLock(lock)).toBe(false);
    expect(readFileSync(lock, 'utf8')).toBe(String(process.ppid));
    writeFileSync(lock, processIdentity(process.ppid)!);
    expect(acquirePidLock(lock)).toBe(false);
    expect(readFileSync(lock, 'utf8')).toBe(processIdentity(process.ppid));
    writeFileSync(lock, String(process.pid));
    expect(acquirePidLock(lock)).toBe(true);
  });

  it('a killed process its parent has not reaped yet (a zombie) no longer counts as alive', async () => {
    // `sleep 30` (after exec) never waits for its child: the child stays a zombie once killed.
    const parent = spawn('sh', ['-c', 'sleep 30 & echo $!; exec sleep 30'], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    try {
      const pid = await new Promise<number>((resolve) =>
        parent.stdout.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))),
      );
      const identity = processIdentity(pid);
      expect(identity).toBeDefined();
      expect(identityAlive(identity!)).toBe(true);
      // Kill only once the shell has become `sleep`: a shell still running would reap the child.
      const deadline = Date.now() + 5000;
      const execed = () => readFileSync(`/proc/${parent.pid}/cmdline`, 'utf8') === 'sleep\x0030\x00';
      while (!execed() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      expect(execed()).toBe(true);
      process.kill(pid, 'SIGKILL');
      const state = () => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0];
      while (state() !== 'Z' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(state()).toBe('Z');
      expect(processIdentity(pid)).toBeUndefined();
      expect(identityAlive(identity!)).toBe(false);
    } finally {
      parent.kill('SIGKILL');
    }
  });

  it('takes over a lock whose pid now names another process (a reboot reused it)', () => {
    const child = spawn('sleep', ['30']);
    try {
      // Same pid, another start time: the writer is gone even though the pid is alive.
      writeFileSync(lock, `${child.pid}:1`);
      expect(acquirePidLock(lock)).toBe(true);
      expect(readFileSync(lock, 'utf8')).toBe(processIdentity(process.pid));
    } finally {
      child.kill('SIGKILL');
    }
  });

  it(`exactly one of ${RACERS} processes gets a free lock, and exactly one gets a stale one`, async () => {
    expect(existsSync(BUILT_LOCK)).toBe(true);
    expect(await race()).toBe(1);
    expect(existsSync(lock)).toBe(false);
    writeFileSync(lock, String(deadPid()));
    expect(await race()).toBe(1);
    expect(readdirSync(dir)).toEqual([]);
  });
});
