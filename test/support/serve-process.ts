import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI_MAIN } from './cli-runner.js';
import { endProcess, killDaemonsOf } from './daemon-reaper.js';
import { waitFor } from './local-daemon.js';

/**
 * A real `ptyrelay serve` in a throwaway HOME (its token, config dir and local daemon's runtime
 * dir are its own), restartable like a user would: the relay process goes, the daemon stays.
 */
export class ServeProcess {
  readonly root: string;
  readonly env: NodeJS.ProcessEnv;
  proc: ChildProcess | undefined;
  stderr = '';
  stdout = '';
  /** `ws://127.0.0.1:PORT` of the running relay. */
  url = '';

  constructor(prefix: string) {
    this.root = mkdtempSync(join(tmpdir(), prefix));
    mkdirSync(this.configDir, { recursive: true });
    this.env = { ...process.env, HOME: join(this.root, 'home'), PTYRELAY_RUNTIME_DIR: this.runtimeDir };
    for (const k of [
      'PTYRELAY_TOKEN',
      'PTYRELAY_CONFIG',
      'PTYRELAY_URL',
      'XDG_RUNTIME_DIR',
      'VITEST',
      'PTYRELAY_CLIENT_ID',
    ])
      delete this.env[k];
  }

  get configDir(): string {
    return join(this.root, 'home', '.config', 'ptyrelay');
  }

  get configFile(): string {
    return join(this.configDir, 'config.json');
  }

  get runtimeDir(): string {
    return join(this.root, 'run');
  }

  get httpUrl(): string {
    return this.url.replace('ws:', 'http:');
  }

  /** The startup token the relay created on its first start. */
  token(): string {
    return readFileSync(join(this.configDir, 'token'), 'utf8').trim();
  }

  /** Starts the relay on any free port; resolves once it listens and has printed its banner (PTYRELAY_URL is set in `env`). */
  async start(): Promise<void> {
    this.stderr = '';
    this.stdout = '';
    const proc = spawn(process.execPath, [CLI_MAIN, 'serve', '--listen', '127.0.0.1:0'], { env: this.env });
    this.proc = proc;
    proc.stderr?.on('data', (d) => {
      this.stderr += d;
    });
    proc.stdout?.on('data', (d) => {
      this.stdout += d;
    });
    const listening = /relay listening on (ws:\S+)/;
    // The banner's last line (`token: …`): its lines may arrive in more than one pipe read.
    await waitFor(
      () => listening.test(this.stderr) && /^ptyrelay: token: /m.test(this.stderr),
      60_000,
      'the relay to listen',
    );
    this.url = listening.exec(this.stderr)![1]!;
    this.env.PTYRELAY_URL = this.url;
  }

  /** Stops the relay with `signal` and waits for its exit (its terminals keep running). */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    this.proc?.kill(signal);
    await endProcess(this.proc);
    this.proc = undefined;
  }

  /** Stops the relay, ends its local daemon and removes the HOME. */
  async cleanup(): Promise<void> {
    await endProcess(this.proc);
    await killDaemonsOf(this.runtimeDir);
    rmSync(this.root, { recursive: true, force: true });
  }
}
