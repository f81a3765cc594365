import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { acquirePidLock, releasePidLock } from '../../agent-stub/daemon/daemon-lock.js';
import { processIdentity } from '../../agent-stub/daemon/process-identity.js';

describe('daemon pid lock', () => {
  let dir: string;
  let lock: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'ptr-lock-'));
    lock = join(dir, 'stub.lock');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('records pid and start time, and releases only its own lock', () => {
    expect(acquirePidLock(lock)).toBe(true);
    expect(readFileSync(lock, 'utf8')).toBe(processIdentity(process.pid));
    expect(readFileSync(lock, 'utf8')).toMatch(/^\d+:\d+$/);
    releasePidLock(lock);
    expect(() => readFileSync(lock)).toThrow();
  });

  it('is held by a live writer', async () => {
    const child = spawn('sleep', ['30']);
    try {
      writeFileSync(lock, processIdentity(child.pid!)!);
      expect(acquirePidLock(lock)).toBe(false);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('takes over a lock whose pid now names another process (a reboot reused it)', async () => {
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

  it('still understands a bare pid written by an older build', () => {
    writeFileSync(lock, String(process.pid));
    // Our own live pid holds it; a dead one does not.
    expect(acquirePidLock(lock)).toBe(true);
    writeFileSync(lock, '999999999');
    expect(acquirePidLock(lock)).toBe(true);
  });
});
