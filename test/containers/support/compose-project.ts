/**
 * The top-level docker-compose.yml run as a user runs it, once per test file: its own project name,
 * its own key/data dir, and a free 127.0.0.1 port for every host, relay and the balancer (passed
 * through the file's variables), so it never meets a quick-start relay or another test. Debian's
 * `docker-compose` (1.29), else the `docker compose` plugin.
 */
import { execFile, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../../support/local-daemon.js';
import { containerEngine, type EngineCheck } from './container-engine.js';
import { freePort } from './host-container.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const COMPOSE_FILE = join(ROOT, 'docker-compose.yml');
const BUILD_SCRIPT = join(ROOT, 'test', 'containers', 'images', 'build-images.sh');
/** The relay image packs and stages the package: a minute when it is not built yet. */
const RELAY_BUILD_TIMEOUT_MS = 10 * 60_000;
const COMPOSE_TIMEOUT_MS = 120_000;
const HEALTHY_TIMEOUT_MS = 60_000;

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

export function run(cmd: string, args: string[], env: NodeJS.ProcessEnv, timeout: number): Promise<Run> {
  return new Promise((resolve) => {
    execFile(cmd, args, { env, timeout, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** `docker-compose` (Debian's), else `docker compose` (the plugin), else undefined. */
function composeCommand(): string[] | undefined {
  for (const cmd of [['docker-compose'], ['docker', 'compose']]) {
    const v = spawnSync(cmd[0]!, [...cmd.slice(1), 'version'], { encoding: 'utf8' });
    if (!v.error && v.status === 0) return cmd;
  }
  return undefined;
}

let relayChecked: EngineCheck | undefined;

/** The engine, a compose CLI and the relay image (built from this checkout's dist/ when missing). */
export function composeCheck(): EngineCheck {
  const engine = containerEngine();
  if (!engine.ok) return engine;
  if (!composeCommand()) return { ok: false, reason: 'neither docker-compose nor the docker compose plugin' };
  relayChecked ??= buildRelayImage(engine);
  return relayChecked;
}

function buildRelayImage(engine: EngineCheck & { ok: true }): EngineCheck {
  const build = spawnSync(BUILD_SCRIPT, ['relay'], { encoding: 'utf8', timeout: RELAY_BUILD_TIMEOUT_MS });
  if (build.status === 0 && /PTYRELAY_RELAY_IMAGE=/.test(build.stdout)) return engine;
  const tail = `${build.stderr ?? ''}`.trim().split('\n').slice(-3).join(' | ');
  return { ok: false, reason: `building the relay image failed (${build.status}): ${tail}` };
}

/** The ports of one project, each a free 127.0.0.1 port. */
export interface ComposePorts {
  host1: number;
  host2: number;
  relay: number;
  relayB: number;
  fleet: number;
}

export class ComposeProject {
  readonly project: string;
  private readonly cmd: string[];

  private constructor(
    readonly dir: string,
    readonly ports: ComposePorts,
    readonly env: NodeJS.ProcessEnv,
    readonly profiles: string[],
  ) {
    this.project = `ptyrelay-${profiles.join('-') || 'compose'}-test-${process.pid}`;
    this.cmd = composeCommand() ?? ['docker-compose'];
  }

  /** A project with its data dir (`PTYRELAY_COMPOSE_DIR`) and ports; nothing started yet. */
  static async create(profiles: string[] = []): Promise<ComposeProject> {
    const root = mkdtempSync(join(tmpdir(), 'ptr-compose-'));
    const data = join(root, 'data');
    mkdirSync(data);
    const ports: ComposePorts = {
      host1: await freePort(),
      host2: await freePort(),
      relay: await freePort(),
      relayB: await freePort(),
      fleet: await freePort(),
    };
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      HOME: join(root, 'home'),
      PTYRELAY_COMPOSE_DIR: data,
      PTYRELAY_HOST1_PORT: String(ports.host1),
      PTYRELAY_HOST2_PORT: String(ports.host2),
      PTYRELAY_RELAY_PORT: String(ports.relay),
      PTYRELAY_RELAY_B_PORT: String(ports.relayB),
      PTYRELAY_FLEET_PORT: String(ports.fleet),
    };
    for (const k of [
      'PTYRELAY_CONFIG',
      'PTYRELAY_URL',
      'PTYRELAY_TOKEN',
      'SSH_AUTH_SOCK',
      'COMPOSE_PROFILES',
    ])
      delete env[k];
    mkdirSync(env.HOME!);
    return new ComposeProject(root, ports, env, profiles);
  }

  /** The relays' data dir (keys, relay.json, token, tokens/). */
  get dataDir(): string {
    return this.env.PTYRELAY_COMPOSE_DIR!;
  }

  compose(...args: string[]): Promise<Run> {
    const profiles = this.profiles.flatMap((p) => ['--profile', p]);
    const [bin, ...pre] = this.cmd;
    return run(
      bin!,
      [...pre, '-f', COMPOSE_FILE, '-p', this.project, ...profiles, ...args],
      this.env,
      COMPOSE_TIMEOUT_MS,
    );
  }

  /** The startup token the relays share (made by the first one that started). */
  token(): string {
    return readFileSync(join(this.dataDir, 'token'), 'utf8').trim();
  }

  /** Resolves once `GET http://127.0.0.1:port/healthz` answers 200. */
  async healthy(port: number, timeoutMs = HEALTHY_TIMEOUT_MS): Promise<void> {
    await waitFor(
      async () => {
        const r = await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined);
        return r?.ok === true;
      },
      timeoutMs,
      `/healthz on 127.0.0.1:${port}`,
    );
  }

  /** The container id of a service. */
  async containerOf(service: string): Promise<string> {
    const ps = await this.compose('ps', '-q', service);
    const id = ps.stdout.trim();
    if (!id) throw new Error(`no container for ${service}: ${ps.stderr}`);
    return id;
  }

  /** What of this project Docker still has: containers, networks and volumes (labelled by compose). */
  async leftovers(): Promise<string[]> {
    const label = `label=com.docker.compose.project=${this.project}`;
    const out: string[] = [];
    for (const kind of [
      ['ps', '-a', '-q'],
      ['network', 'ls', '-q'],
      ['volume', 'ls', '-q'],
    ]) {
      const r = await run('docker', [...kind, '--filter', label], this.env, COMPOSE_TIMEOUT_MS);
      if (r.code !== 0) throw new Error(`docker ${kind.join(' ')} failed: ${r.stderr}`);
      out.push(...r.stdout.split('\n').filter(Boolean));
    }
    return out;
  }

  /** `down` with volumes, then the data dir and HOME removed. */
  async cleanup(): Promise<void> {
    const down = await this.compose('down', '--volumes', '--timeout', '0');
    if (down.code !== 0) console.warn(`docker-compose down failed: ${down.stderr}`);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
