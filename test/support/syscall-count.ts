import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { allOf, capability, rootAvailable } from './capabilities.js';

/**
 * Capabilities `strace` and `root`: strace is there (the CI image installs it) and may attach to
 * other users' processes (we run as root). Each missing one is printed, or throws when required.
 */
export function straceAvailable(): boolean {
  const r = spawnSync('strace', ['-V'], { stdio: 'ignore' });
  const strace = capability(
    'strace',
    r.status === 0
      ? undefined
      : `strace -V failed: ${r.error?.message ?? `exit ${r.status}`} (apt-get install strace)`,
  );
  return allOf(strace, rootAvailable("strace attaching to other users' processes"));
}

/**
 * Counts a running process's reads and writes on Unix sockets (all threads) with strace, between
 * {@link start} and {@link stop}: the daemon's socket toward sshd or the relay.
 */
export class SocketSyscalls {
  private child: ChildProcess | undefined;
  private readonly dir = mkdtempSync(join(tmpdir(), 'ptr-strace-'));
  private readonly out = join(this.dir, 'trace');

  constructor(private readonly pid: number) {}

  async start(): Promise<void> {
    const child = spawn(
      'strace',
      [
        '-f',
        '-y',
        '-qq',
        '-s',
        '64',
        '-e',
        'trace=read,write,writev,readv,sendmsg,recvmsg',
        '-o',
        this.out,
        '-p',
        String(this.pid),
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    this.child = child;
    // strace has attached once it traced anything or said so; give it at most 3 s.
    const deadline = Date.now() + 3000;
    while (Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      try {
        if (readFileSync(this.out, 'utf8').length > 0) break;
      } catch {
        // not created yet
      }
    }
    await new Promise((r) => setTimeout(r, 200));
  }

  /** Stops tracing; returns the counts of calls on Unix sockets after `start`. */
  async stop(): Promise<{ writes: number; reads: number }> {
    const child = this.child;
    this.child = undefined;
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGINT');
      await exited;
    }
    const text = readFileSync(this.out, 'utf8');

    console.log(
      text
        .split('\n')
        .filter((l) => /(write|writev)\(\d+<(UNIX|socket)/.test(l))
        .join('\n'),
    );
    rmSync(this.dir, { recursive: true, force: true });
    let writes = 0;
    let reads = 0;
    for (const line of text.split('\n')) {
      const m = /^(?:\d+\s+)?(\w+)\(\d+<(?:UNIX|socket)[^>]*>/.exec(line);
      if (!m) continue;
      // A read that found nothing (EAGAIN) is not a segment.
      if (/= -1 EAGAIN/.test(line)) continue;
      if (m[1] === 'write' || m[1] === 'writev' || m[1] === 'sendmsg') writes++;
      else reads++;
    }
    return { writes, reads };
  }

  /** Ends tracing if still running (test cleanup). */
  dispose(): void {
    if (this.child?.exitCode === null) this.child.kill('SIGKILL');
    rmSync(this.dir, { recursive: true, force: true });
  }
}
