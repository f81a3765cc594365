/**
 * The top-level docker-compose.yml as a user runs it: `docker-compose up` brings up the relay (its
 * image: Node 24 and the packed ptyrelay) and two hosts it already trusts; `/healthz` answers; the
 * `ptyrelay` CLI from outside (PTYRELAY_URL, the token file in the compose dir) opens a terminal on
 * each host and runs a command there; the web page in Chromium lists both hosts; a quick-start relay
 * outside compose with compose.relay.json works beside it on the same hosts; `docker-compose down`
 * leaves nothing.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI_MAIN } from '../support/cli-runner.js';
import { endProcess } from '../support/daemon-reaper.js';
import { waitFor } from '../support/local-daemon.js';
import { browserAvailable, launchBrowser, type TestBrowser } from '../support/web-browser.js';
import { ComposeProject, composeCheck, run } from './support/compose-project.js';
import { reportSkip } from './support/container-engine.js';

const ROOT = join(import.meta.dirname, '..', '..');
const HOSTS = ['host1', 'host2'] as const;
const CLI_TIMEOUT_MS = 60_000;

const engine = composeCheck();
reportSkip('docker-compose', engine);
const withBrowser = engine.ok && browserAvailable();

// biome-ignore lint/suspicious/noExplicitAny: parsed CLI output, checked field by field
async function cliJson(args: string[], env: NodeJS.ProcessEnv): Promise<any> {
  const dash = args.indexOf('--');
  const withJson = dash < 0 ? [...args, '--json'] : [...args.slice(0, dash), '--json', ...args.slice(dash)];
  const r = await run(process.execPath, [CLI_MAIN, ...withJson], env, CLI_TIMEOUT_MS);
  if (r.code !== 0) throw new Error(`ptyrelay ${args.join(' ')} failed (${r.code}): ${r.stderr}`);
  return JSON.parse(r.stdout);
}

/** Opens a bash on `host`, runs a command that says where it ran, and waits for its output. */
async function runOn(host: string, env: NodeJS.ProcessEnv): Promise<void> {
  const { id } = await cliJson(['open', host, '--', 'bash', '--norc'], env);
  expect(id).toMatch(new RegExp(`^${host}/pty-\\d+$`));
  await cliJson(['send', id, `echo "on-$(hostname)-${host}:$(node --version):$(id -un)"`], env);
  // Runs on that host, as its login user, on its own node 18.
  const said = new RegExp(`on-.*-${host}:v18\\.\\d+\\.\\d+:dev`);
  await waitFor(async () => said.test((await cliJson(['read', id], env)).text), 30_000, `output of ${id}`);
  await cliJson(['kill', id, '--now'], env);
}

describe.skipIf(!engine.ok)('docker-compose.yml', () => {
  let project: ComposeProject;
  let cliEnv: NodeJS.ProcessEnv;
  let outside: ChildProcess | undefined;
  let browser: TestBrowser | undefined;

  beforeAll(async () => {
    project = await ComposeProject.create();
    cliEnv = {
      ...project.env,
      PTYRELAY_URL: `ws://127.0.0.1:${project.ports.relay}`,
      PTYRELAY_TOKEN_FILE: join(project.dataDir, 'token'),
    };
  });

  afterAll(async () => {
    await browser?.close();
    outside?.kill('SIGTERM');
    await endProcess(outside);
    await project?.cleanup();
  }, 120_000);

  it('`docker-compose up` starts the relay and both hosts; /healthz answers', async () => {
    const up = await project.compose('up', '-d');
    expect(up.code, up.stderr).toBe(0);
    await project.healthy(project.ports.relay);
    const health = await fetch(`http://127.0.0.1:${project.ports.relay}/healthz`, {
      headers: { authorization: `Bearer ${project.token()}` },
    });
    const body = (await health.json()) as { ok: boolean; hosts: Record<string, unknown> };
    expect(body.ok).toBe(true);
    expect(Object.keys(body.hosts)).toEqual(expect.arrayContaining([...HOSTS]));
  }, 180_000);

  it('`ptyrelay open` from outside runs a command on each host', async () => {
    const hosts = await cliJson(['hosts'], cliEnv);
    expect(JSON.stringify(hosts)).toContain('host2');
    for (const h of HOSTS) await runOn(h, cliEnv);
  }, 120_000);

  it.skipIf(!withBrowser)(
    'the web page lists both hosts',
    async () => {
      browser = await launchBrowser();
      const page = await browser.page();
      await page.goto(`http://127.0.0.1:${project.ports.relay}/#token=${project.token()}`);
      await page.getByText('● connected').waitFor({ timeout: 15_000 });
      for (const h of HOSTS) await page.locator(`.host-row[data-host="${h}"]`).waitFor({ timeout: 15_000 });
      expect(await page.locator('.host-row').count()).toBeGreaterThanOrEqual(HOSTS.length);
    },
    60_000,
  );

  it('a quick-start relay outside compose (compose.relay.json) works beside it', async () => {
    // The checked-in config with this test's ports and key dir (paths relative to the file).
    const config = JSON.parse(readFileSync(join(ROOT, 'compose.relay.json'), 'utf8'));
    for (const h of HOSTS) {
      config.hosts[h].port = project.ports[h];
      for (const f of ['identityFile', 'knownHostsFile'])
        config.hosts[h][f] = config.hosts[h][f].replace(/^\.compose\//, 'data/');
    }
    writeFileSync(join(project.dir, 'relay.json'), JSON.stringify(config));
    const env = { ...project.env, PTYRELAY_TOKEN: 'compose-test-quick-start-token' };
    outside = spawn(
      process.execPath,
      [CLI_MAIN, 'serve', '--config', join(project.dir, 'relay.json'), '--listen', '127.0.0.1:0'],
      { env },
    );
    let stderr = '';
    outside.stderr?.on('data', (d) => {
      stderr += d;
    });
    const url = await waitFor(
      () => /relay listening on (ws:\/\/127\.0\.0\.1:\d+)/.exec(stderr)?.[1],
      15_000,
      'the quick-start relay',
    );
    await runOn('host2', { ...env, PTYRELAY_URL: url });
    // The relay in compose still serves the same host.
    await runOn('host2', cliEnv);
  }, 120_000);

  it('`docker-compose down` leaves nothing running', async () => {
    const down = await project.compose('down', '--volumes', '--timeout', '0');
    expect(down.code, down.stderr).toBe(0);
    expect(await project.leftovers()).toEqual([]);
  }, 120_000);
});
