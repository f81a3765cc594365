import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  ID_RESERVATION_RETENTION_MS,
  TerminalIdAllocator,
} from '../../agent-stub/daemon/terminal-id-allocator.js';

const ROOT = join(import.meta.dirname, '..', '..');
const COMPILED = join(ROOT, 'dist', 'agent-stub', 'daemon', 'terminal-id-allocator.js');

describe('TerminalIdAllocator', () => {
  const root = mkdtempSync(join(tmpdir(), 'ptr-ids-'));
  let n = 0;
  const freshDir = () => join(root, `s${++n}`, 'ids');
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('counts up, and a new allocator on the same dir (a restarted daemon, another build) continues', () => {
    const dir = freshDir();
    const a = new TerminalIdAllocator(dir, 'build-a 1');
    expect([a.next(), a.next(), a.next()]).toEqual(['pty-1', 'pty-2', 'pty-3']);
    const b = new TerminalIdAllocator(dir, 'build-b 2');
    expect(b.next()).toBe('pty-4');
    // The first allocator learns of ids taken by others instead of handing out its own next number.
    expect(a.next()).toBe('pty-5');
  });

  it('never hands one id to two processes allocating at the same time', async () => {
    const dir = freshDir();
    const procs = 4;
    const each = 150;
    // Every process starts allocating at the same instant, so their claims interleave.
    const startAt = Date.now() + 1500;
    const script = `
      import { TerminalIdAllocator } from ${JSON.stringify(COMPILED)};
      const a = new TerminalIdAllocator(process.argv[1], 'proc ' + process.pid);
      while (Date.now() < ${startAt}) {}
      const ids = [];
      for (let i = 0; i < ${each}; i++) ids.push(a.next());
      process.stdout.write(JSON.stringify(ids));
    `;
    const run = () =>
      new Promise<string[]>((resolve, reject) => {
        const child = spawn(process.execPath, ['--input-type=module', '-e', script, dir], {
          stdio: ['ignore', 'pipe', 'inherit'],
        });
        let out = '';
        child.stdout.on('data', (d: Buffer) => {
          out += d;
        });
        child.once('error', reject);
        child.once('exit', (code) =>
          code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`exit ${code}`)),
        );
      });
    const all = (await Promise.all(Array.from({ length: procs }, run))).flat();
    expect(all.every((id) => /^pty-\d+$/.test(id))).toBe(true);
    expect(new Set(all).size).toBe(procs * each);
    // Every number was claimed by exactly one process: no gaps, no repeats.
    const nums = all.map((id) => Number(id.slice(4))).sort((x, y) => x - y);
    expect(nums).toEqual(Array.from({ length: procs * each }, (_, i) => i + 1));
  });

  it('prunes oldest first and stops at the first reservation inside the window (one stat for a day of young ids)', () => {
    const dir = freshDir();
    mkdirSync(dir, { recursive: true });
    const old = (Date.now() - ID_RESERVATION_RETENTION_MS - 60_000) / 1000;
    for (let i = 1; i <= 2000; i++) writeFileSync(join(dir, String(i)), '');
    for (let i = 1; i <= 5; i++) utimesSync(join(dir, String(i)), old, old);
    // Out of order (a clock step): old, but above a young one; it waits for a later scan.
    utimesSync(join(dir, '1500'), old, old);
    const a = new TerminalIdAllocator(dir, 't');
    expect(a.next()).toBe('pty-2001');
    // Five old ones deleted, then the first young one (6) ends the prune.
    expect(a.lastPruneChecked).toBe(6);
    const left = readdirSync(dir).map(Number);
    expect(left).toHaveLength(2001 - 5);
    expect(Math.min(...left)).toBe(6);
    expect(left).toContain(1500);
  });

  it('prunes reservations past the retention window but keeps counting from the highest', () => {
    const dir = freshDir();
    mkdirSync(dir, { recursive: true });
    const old = (Date.now() - ID_RESERVATION_RETENTION_MS - 60_000) / 1000;
    for (let i = 1; i <= 20; i++) {
      writeFileSync(join(dir, String(i)), '');
      utimesSync(join(dir, String(i)), old, old);
    }
    const a = new TerminalIdAllocator(dir, 't');
    expect(a.next()).toBe('pty-21');
    expect(readdirSync(dir)).toEqual(['21']);
    // Even with the older reservations gone a fresh allocator continues above them.
    expect(new TerminalIdAllocator(dir, 't').next()).toBe('pty-22');
  });

  it('falls back to random ids that do not repeat when the state dir cannot be written', () => {
    const blocker = join(root, 'not-a-dir');
    writeFileSync(blocker, '');
    const logged: string[] = [];
    const a = new TerminalIdAllocator(join(blocker, 'ids'), 't', (m) => logged.push(m));
    const ids = Array.from({ length: 50 }, () => a.next());
    expect(ids.every((id) => /^pty-r[0-9a-f]{20}$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect(logged).toHaveLength(1);
  });
});
