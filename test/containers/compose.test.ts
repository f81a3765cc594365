/**
 * The top-level docker-compose.yml as a user runs it: `docker-compose up` (keys generated into the
 * shared dir, two hosts on their 127.0.0.1 ports), `ptyrelay serve --config` with the checked-in
 * compose.relay.json (pointed at this test's ports and key dir), `ptyrelay open` on each host, a
 * command run in each, then `docker-compose down`.
 */
import { type ChildProcess, execFile, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../support/local-daemon.js';
import { containerEngine, type EngineCheck, reportSkip } from './support/container-engine.js';
import { freePort } from './support/host-container.js';

const ROOT = join(import.meta.dirname, '..', '..');
const MAIN = join(ROOT, 'dist', 'relay', 'cli', 'main.js');
const COMPOSE_FILE = join(ROOT, 'docker-compose.yml');
const HOSTS = ['host1', 'host2'] as const;
const CLI_TIMEOUT_MS = 60_000;
const COMPOSE_TIMEOUT_MS = 120_000;

function composeCheck(): EngineCheck {
  const engine = containerEngine();
  if (!engine.ok) return engine;
  const v = spawnSync('docker-compose', ['version', '--short'], { encoding: 'utf8' });
  if (v.error || v.status !== 0) return { ok: false, reason: 'docker-compose is not installed' };
  return engine;
}

const engine = composeCheck();
reportSkip('docker-compose', engine);

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv, timeout = CLI_TIMEOUT_MS): Promise<Run> {
  return new Promise((resolve) => {
    execFile(cmd, args, { env, timeout }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

// biome-ignore lint/suspicious/noExplicitAny: parsed CLI output, checked field by field
async function cliJson(args: string[], env: NodeJS.ProcessEnv): Promise<any> {
  const dash = args.indexOf('--');
  const withJson = dash < 0 ? [...args, '--json'] : [...args.slice(0, dash), '--json', ...args.slice(dash)];
  const r = await run(process.execPath, [MAIN, ...withJson], env);
  if (r.code !== 0) throw new Error(`ptyrelay ${args.join(' ')} failed (${r.code}): ${r.stderr}`);
  return JSON.parse(r.stdout);
}

describe.skipIf(!engine.ok)('docker-compose.yml', () => {
  let root: string;
  let env: NodeJS.ProcessEnv;
  let relay: ChildProcess | undefined;
  const project = `ptyrelay-compose-test-${process.pid}`;
  const compose = (...args: string[]) =>
    run('docker-compose', ['-f', COMPOSE_FILE, '-p', project, ...args], env, COMPOSE_TIMEOUT_MS);

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'ptr-compose-'));
    const keys = join(root, 'keys');
    mkdirSync(keys);
    const ports = [await freePort(), await freePort()];
    env = {
      ...process.env,
      HOME: join(root, 'home'),
      PTYRELAY_COMPOSE_DIR: keys,
      PTYRELAY_HOST1_PORT: String(ports[0]),
      PTYRELAY_HOST2_PORT: String(ports[1]),
      PTYRELAY_TOKEN: 'compose-test-token',
    };
    for (const k of ['PTYRELAY_CONFIG', 'PTYRELAY_URL', 'SSH_AUTH_SOCK']) delete env[k];
    mkdirSync(env.HOME!);
    // The checked-in relay config, with this test's ports and key dir (paths relative to the file).
    const config = JSON.parse(readFileSync(join(ROOT, 'compose.relay.json'), 'utf8'));
    for (const [i, h] of HOSTS.entries()) {
      config.hosts[h].port = ports[i];
      for (const f of ['identityFile', 'knownHostsFile'])
        config.hosts[h][f] = config.hosts[h][f].replace(/^\.compose\//, 'keys/');
    }
    writeFileSync(join(root, 'relay.json'), JSON.stringify(config));
  });

  afterAll(async () => {
    relay?.kill('SIGTERM');
    if (root) {
      const down = await compose('down', '--volumes', '--timeout', '0');
      if (down.code !== 0) console.warn(`docker-compose down failed: ${down.stderr}`);
      rmSync(root, { recursive: true, force: true });
    }
  }, COMPOSE_TIMEOUT_MS);

  it(
    'brings up two hosts, opens a terminal on each through the relay, and takes them down',
    async () => {
      const up = await compose('up', '-d');
      expect(up.code, up.stderr).toBe(0);
      const known = await waitFor(
        () => {
          try {
            return readFileSync(join(root, 'keys', 'known_hosts'), 'utf8');
          } catch {
            return undefined;
          }
        },
        30_000,
        'the generated known_hosts',
      );
      expect(known.trim().split('\n')).toHaveLength(2);

      relay = spawn(
        process.execPath,
        [MAIN, 'serve', '--config', join(root, 'relay.json'), '--listen', '127.0.0.1:0'],
        { env },
      );
      let stderr = '';
      relay.stderr?.on('data', (d) => {
        stderr += d;
      });
      const url = await waitFor(
        () => /relay listening on (ws:\/\/127\.0\.0\.1:\d+)/.exec(stderr)?.[1],
        15_000,
        'the relay',
      );
      const cenv = { ...env, PTYRELAY_URL: url };
      const hosts = await cliJson(['hosts'], cenv);
      expect(JSON.stringify(hosts)).toContain('host2');

      for (const h of HOSTS) {
        const { id } = await cliJson(['open', h, '--', 'bash', '--norc'], cenv);
        expect(id).toMatch(new RegExp(`^${h}/pty-\\d+$`));
        await cliJson(['send', id, `echo "on-${h}:$(node --version):$(id -un)"`], cenv);
        // Runs on that host, as its login user, on its own node 18.
        const said = new RegExp(`on-${h}:v18\\.\\d+\\.\\d+:dev`);
        await waitFor(
          async () => said.test((await cliJson(['read', id], cenv)).text),
          30_000,
          `output of ${id}`,
        );
        await cliJson(['kill', id, '--now'], cenv);
      }

      const down = await compose('down', '--timeout', '0');
      expect(down.code, down.stderr).toBe(0);
      const ps = await compose('ps', '-q');
      expect(ps.stdout.trim()).toBe('');
    },
    COMPOSE_TIMEOUT_MS * 2,
  );
});
