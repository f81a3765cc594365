import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { IPtyProvider, PtyDataEvent } from '../../provider/contract.js';
import { tryConnect } from '../../provider/daemon-runtime/socket-probe.js';
import { daemonSocketPath } from '../../provider/daemon-runtime/stub-paths.js';
import { stubBuildId } from '../../relay/core/stub-bundle.js';
import { LocalPtyProvider } from '../../relay/local/local-pty-provider.js';

export interface LocalFixture {
  provider: LocalPtyProvider;
  runtimeDir: string;
  /** A throwaway HOME with empty rc files, so prompts and facts are predictable. */
  home: string;
  /**
   * The daemon's persistent state dir (id counter, cold-restore records): the test file's own
   * (test/support/state-dir-setup.ts), removed after the file.
   */
  stateDir: string;
  daemonPid: number;
  cleanup(): Promise<void>;
}

export async function startLocal(daemonArgs: string[] = []): Promise<LocalFixture> {
  const root = mkdtempSync(join(tmpdir(), 'ptr-'));
  const runtimeDir = join(root, 'run');
  const home = join(root, 'home');
  mkdirSync(home);
  for (const f of ['.bashrc', '.bash_profile', '.zshrc', '.zshenv']) writeFileSync(join(home, f), '');
  writeFileSync(join(home, '.zshrc'), 'PS1="%~ %# "\n');
  // Not a `--state-dir` of the fixture's own: a daemon that another provider of this runtime dir
  // starts (after a kill, say) must find the same id counter and records, and it only inherits
  // the environment.
  const stateDir = process.env.PTYRELAY_STATE_DIR;
  if (!stateDir) throw new Error('PTYRELAY_STATE_DIR is unset (test/support/state-dir-setup.ts sets it)');
  const provider = new LocalPtyProvider({ runtimeDir, daemonArgs });
  const { pid } = await provider.daemonInfo();
  return {
    provider,
    runtimeDir,
    home,
    stateDir,
    daemonPid: pid,
    async cleanup() {
      try {
        await provider.shutdownDaemon();
      } catch {
        // already gone
      }
      await provider.dispose();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** True when a daemon of this build answers in `runtimeDir` (a probe that never starts one). */
export async function daemonAnswers(runtimeDir: string): Promise<boolean> {
  const s = await tryConnect(daemonSocketPath(runtimeDir, stubBuildId()));
  s?.destroy();
  return s !== undefined;
}

export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Polls `fn` (sync or async) until it returns a truthy value. */
export async function waitFor<T>(
  fn: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 10_000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * Collects one terminal's output (bytes and text) and checks seq contiguity as it goes. Events
 * can arrive before spawn() resolves, so create it first and bind the id afterwards.
 */
export class OutputCollector {
  chunks: Buffer[] = [];
  nextSeq: number;
  gaps: string[] = [];
  private off: () => void;
  private early: PtyDataEvent[] = [];

  constructor(
    provider: IPtyProvider,
    public id?: string,
    fromSeq = 0,
  ) {
    this.nextSeq = fromSeq;
    this.off = provider.onData((e: PtyDataEvent) => {
      if (this.id === undefined) {
        this.early.push(e);
        return;
      }
      this.take(e);
    });
  }

  /** Binds the id; `fromSeq` is where the caller's view ends (e.g. an attach result's providerSequence.value). */
  bind(id: string, fromSeq?: number): this {
    this.id = id;
    if (fromSeq !== undefined) this.nextSeq = fromSeq;
    for (const e of this.early.splice(0)) this.take(e);
    return this;
  }

  private take(e: PtyDataEvent): void {
    if (e.id !== this.id) return;
    if (e.seq !== this.nextSeq) this.gaps.push(`expected ${this.nextSeq}, got ${e.seq}`);
    this.nextSeq = e.seq + e.data.length;
    this.chunks.push(Buffer.from(e.data));
  }

  get bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }

  get text(): string {
    return this.bytes.toString('utf8');
  }

  waitText(re: RegExp | string, timeoutMs = 10_000): Promise<string> {
    const test = (t: string) => (typeof re === 'string' ? t.includes(re) : re.test(t));
    return waitFor(() => (test(this.text) ? this.text : undefined), timeoutMs, `output matching ${re}`);
  }

  stop(): void {
    this.off();
  }
}
