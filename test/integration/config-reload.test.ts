import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allOf, rootAvailable } from '../support/capabilities.js';
import { runCli } from '../support/cli-runner.js';
import { waitFor } from '../support/local-daemon.js';
import { ServeProcess } from '../support/serve-process.js';
import { hostFor } from '../support/ssh-fixture.js';
import { type SshdInstance, sshdAvailable, startSshd } from '../support/sshd.js';

const available = allOf(sshdAvailable(), rootAvailable('a throwaway login user'));
/** A login user of this file's own (its daemon is nobody else's); removed after. */
const USER = 'ptyrelay-t52-reload';

describe.skipIf(!available)('the relay re-reads its config file while it runs', { timeout: 180_000 }, () => {
  let serve: ServeProcess;
  let sshd: SshdInstance;
  let env: NodeJS.ProcessEnv;
  let configFile: string;

  /** Writes the config as editors do: a new file renamed over the old one. */
  const writeConfig = (config: unknown) => {
    const tmp = `${configFile}.tmp`;
    writeFileSync(tmp, typeof config === 'string' ? config : JSON.stringify(config, null, 2), {
      mode: 0o600,
    });
    renameSync(tmp, configFile);
  };
  const reloads = () =>
    serve.stderr
      .split('\n')
      .filter((l) => l.includes('config reloaded') || l.includes('config edit refused'));
  const nextReload = async (before: number) => {
    await waitFor(() => reloads().length > before, 20_000, 'the relay to re-read its config').catch(
      (err: Error) => {
        // What the relay said meanwhile (a reload that never ended shows there, nowhere else).
        throw new Error(
          `${err.message}\nrelay stderr (tail):\n${serve.stderr.slice(-3000)}\nrelay stdout (tail):\n${serve.stdout.slice(-3000)}`,
        );
      },
    );
    return reloads()[before]!;
  };

  beforeAll(async () => {
    serve = new ServeProcess('ptr-reload-');
    configFile = serve.configFile;
    writeConfig({ hosts: {} });
    sshd = await startSshd({ user: USER });
    env = serve.env;
    await serve.start();
  });
  afterAll(async () => {
    await serve?.cleanup();
    spawnSync('pkill', ['-KILL', '-u', USER], { stdio: 'ignore' });
    await sshd?.stop();
    spawnSync('userdel', ['-r', USER], { stdio: 'ignore' });
  });

  it('says where the web page is and that the config is re-read', () => {
    expect(serve.stderr).toMatch(
      /web page: http:\/\/127\.0\.0\.1:\d+\/ {2}\(it asks for the token; or open http:\/\/\S+\/#token=\$\(cat ~\/\.config\/ptyrelay\/token\)\)/,
    );
    expect(serve.stderr).toContain('(config: ~/.config/ptyrelay/config.json, re-read when it changes)');
  });

  it('a host added to the file can be used at once', async () => {
    const before = reloads().length;
    writeConfig({ hosts: { sshbox: hostFor(sshd) } });
    expect(await nextReload(before)).toContain('config reloaded: hosts: added sshbox');
    // Adoption looks for this build's stub there and finds none: it never deploys one itself.
    await waitFor(
      () => /"host":"sshbox"[^\n]*not adopted at start/.test(serve.stdout),
      20_000,
      'the adoption attempt',
    );
    expect(serve.stdout).toMatch(/STUB_NOT_INSTALLED|no intact stub/);
    expect(existsSync(join(sshd.userHome, '.cache', 'ptyrelay'))).toBe(false);
    const opened = await runCli(['open', 'sshbox', '--', 'sh', '-c', 'echo on-sshbox; exec sleep 60'], env);
    expect(opened.code, opened.stderr).toBe(0);
    expect(opened.stdout.trim()).toMatch(/^sshbox\/pty-\d+$/);
    const hosts = await runCli(['hosts'], env);
    expect(hosts.stdout).toMatch(/^sshbox\s+connected/m);
  });

  it('an edit that does not validate is refused with its key, and the running config stays', async () => {
    const before = reloads().length;
    writeConfig({ hosts: { sshbox: { ...hostFor(sshd), port: 'twenty-two' } } });
    const line = await nextReload(before);
    expect(line).toContain('config edit refused (CONFIG_INVALID)');
    expect(line).toContain(configFile);
    expect(line).toContain('hosts.sshbox.port');
    const ls = await runCli(['ls', 'sshbox'], env);
    expect(ls.code, ls.stderr).toBe(0);
    expect(ls.stdout).toMatch(/sshbox\/pty-\d+/);
  });

  it('SIGHUP re-reads the file too; other sections changed apply at the next restart', async () => {
    writeFileSync(
      configFile,
      JSON.stringify({ hosts: { sshbox: hostFor(sshd) }, limits: { maxTerminals: 7 } }),
      {
        mode: 0o600,
      },
    );
    // The file watch sees that write as well; SIGHUP must give at least one more reload.
    await new Promise((r) => setTimeout(r, 500));
    const before = reloads().length;
    serve.proc!.kill('SIGHUP');
    const line = await nextReload(before);
    expect(line).toContain('config reloaded: hosts unchanged; limits changed: applies at the next restart');
    expect(serve.proc!.exitCode).toBeNull();
  });

  it('code navigation enabled by an edit answers at once, and turned off again the same way', async () => {
    const notes = join(serve.env.HOME!, 'notes');
    mkdirSync(notes, { recursive: true });
    writeFileSync(join(notes, 'a.md'), 'see [[b]] here\n');
    writeFileSync(join(notes, 'b.md'), '# b\n');
    const nav = () =>
      runCli(['nav', 'local', 'def', `${join(notes, 'a.md')}:1:8`, '--root', notes, '--json'], env);
    const off = await nav();
    expect(off.code).not.toBe(0);
    expect(off.stderr + off.stdout).toContain('LSP_NOT_ENABLED');
    const hosts = { sshbox: hostFor(sshd) };
    let before = reloads().length;
    writeConfig({ hosts, lsp: { hosts: { local: { providers: [{ type: 'markdown-notes' }] } } } });
    expect(await nextReload(before)).toBe('ptyrelay: config reloaded: hosts unchanged; lsp applied');
    const on = await nav();
    expect(on.code, on.stderr).toBe(0);
    expect(JSON.parse(on.stdout).locations.map((l: { path: string }) => l.path)).toEqual(['b.md']);
    before = reloads().length;
    writeConfig({ hosts });
    expect(await nextReload(before)).toContain('lsp applied');
    expect((await nav()).stderr).toContain('LSP_NOT_ENABLED');
  });

  it('a changed host reconnects with its new settings; its terminal goes on', async () => {
    const before = reloads().length;
    writeConfig({ hosts: { sshbox: { ...hostFor(sshd), hostKeyPolicy: 'strict' } } });
    expect(await nextReload(before)).toContain('config reloaded: hosts: changed sshbox');
    await waitFor(
      async () => /^sshbox\s+connected/m.test((await runCli(['hosts'], env)).stdout),
      20_000,
      'the link to come back with the new settings',
    );
    const ls = await runCli(['ls', 'sshbox', '--json'], env);
    expect(ls.code, ls.stderr).toBe(0);
    expect(JSON.parse(ls.stdout).terminals.some((t: { exited?: unknown }) => !t.exited)).toBe(true);
  });

  it('a removed host is gone from the relay (its terminals keep running on the host)', async () => {
    const before = reloads().length;
    writeConfig({ hosts: {} });
    expect(await nextReload(before)).toContain('config reloaded: hosts: removed sshbox');
    const hosts = await runCli(['hosts'], env);
    expect(hosts.stdout).not.toContain('sshbox');
    const open = await runCli(['open', 'sshbox'], env);
    expect(open.code).toBe(1);
    expect(open.stderr).toContain(
      `UNKNOWN_HOST: no host named sshbox is configured in ${configFile} (hosts: local)`,
    );
    const alive = spawnSync('pgrep', ['-u', USER, '-f', 'sleep 60']);
    expect(alive.status, 'the terminal on the removed host is still running').toBe(0);
  });

  it('a host added back that runs the stub but no running terminal is adopted, then let go', async () => {
    spawnSync('pkill', ['-KILL', '-u', USER, '-f', 'sleep 60'], { stdio: 'ignore' });
    const before = reloads().length;
    writeConfig({ hosts: { sshbox: hostFor(sshd) } });
    expect(await nextReload(before)).toContain('config reloaded: hosts: added sshbox');
    await waitFor(
      () => /adopted the hosts that run this stub/.test(serve.stdout.split('config reloaded').at(-1) ?? ''),
      20_000,
      'adoption',
    );
    // Nothing to publish: the relay keeps no SSH connection for it...
    await waitFor(
      async () => /^sshbox\s+idle/m.test((await runCli(['hosts'], env)).stdout),
      20_000,
      'the link let go',
    );
    // ...and the next use connects again.
    const opened = await runCli(['open', 'sshbox', '--', 'sleep', '30'], env);
    expect(opened.code, opened.stderr).toBe(0);
    expect((await runCli(['hosts'], env)).stdout).toMatch(/^sshbox\s+connected/m);
  });
});
