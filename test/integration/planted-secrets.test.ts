import { execFile, spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { waitFor } from '../support/local-daemon.js';
import { generateKey, type SshdInstance, sshdAvailable, startSshd } from '../support/sshd.js';

/**
 * Every secret the relay handles is planted — the startup token, a scoped token, a wrong token
 * presented to it, SSH passwords (plain and from a command), key passphrases (right and wrong)
 * and the private key's own lines — then the real `ptyrelay serve` (debug logging) and CLI are
 * driven through success and every failure they hold a secret in, and every log line, every
 * daemon log and every error message is searched for them.
 */

const MAIN = join(import.meta.dirname, '..', '..', 'dist', 'bin', 'ptyrelay.js');
const STARTUP = 'planted-startup-token-Q7w1x9Zr3kLm';
const WRONG_TOKEN = 'planted-wrong-token-Vb8nT2yU5pEs';
const PASSWORD = 'planted-password-Hc4jK8sD1fGa';
const CMD_PASSWORD = 'planted-cmd-password-Lp0oI9uY7tRe';
const PASSPHRASE = 'planted-passphrase-Wq3eR5tY7uIo';
const WRONG_PASSPHRASE = 'planted-wrong-passphrase-Zx2cV4bN6mAs';
/** Lines of the private key at least this long are searched for (PEM body lines are 64-70). */
const KEY_LINE_MIN = 20;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

describe.skipIf(!sshdAvailable())(
  'planted secrets never reach a log or an error',
  { timeout: 180_000 },
  () => {
    let dir: string;
    let sshd: SshdInstance;
    let keyLines: string[];
    let runtimeDir: string;
    let env: NodeJS.ProcessEnv;
    let serve: ReturnType<typeof spawn> | undefined;
    const captured: Array<{ where: string; text: string }> = [];
    let relayUrl = '';
    let scoped = '';

    const keep = (where: string, text: string) => captured.push({ where, text });

    function cli(args: string[], extra: NodeJS.ProcessEnv = {}): Promise<Run> {
      return new Promise((resolve) => {
        execFile(
          process.execPath,
          [MAIN, ...args],
          { env: { ...env, ...extra }, timeout: 90_000 },
          (err, stdout, stderr) => {
            keep(`stderr of ptyrelay ${args.join(' ')}`, stderr);
            resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
          },
        );
      });
    }

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'ptr-planted-'));
      const home = join(dir, 'home');
      mkdirSync(join(home, '.ssh'), { recursive: true, mode: 0o700 });
      sshd = await startSshd();
      const key = join(dir, 'id_planted');
      sshd.authorize(generateKey(key, { passphrase: PASSPHRASE }).publicKeyLine);
      keyLines = readFileSync(key, 'utf8')
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => l.length >= KEY_LINE_MIN && !l.startsWith('-----'));
      writeFileSync(join(dir, 'pw'), `${CMD_PASSWORD}\n`, { mode: 0o600 });
      runtimeDir = `/tmp/ptr-remote-planted-${process.pid}`;
      const common = {
        host: '127.0.0.1',
        port: sshd.port,
        user: sshd.user,
        knownHostsFile: sshd.knownHostsFile,
        useAgent: false,
      };
      const config = {
        hosts: {
          key: { ...common, identityFile: key, passphrase: PASSPHRASE, runtimeDir },
          badpp: { ...common, identityFile: key, passphrase: WRONG_PASSPHRASE },
          pw: { ...common, identityFile: join(dir, 'none'), password: PASSWORD },
          pwcmd: {
            ...common,
            identityFile: join(dir, 'none'),
            passwordCommand: [
              process.execPath,
              '-e',
              'process.stdout.write(require("fs").readFileSync(process.argv[1]))',
              join(dir, 'pw'),
            ],
          },
        },
      };
      const configPath = join(dir, 'config.json');
      writeFileSync(configPath, JSON.stringify(config), { mode: 0o600 });
      env = {
        ...process.env,
        HOME: home,
        PTYRELAY_TOKEN: STARTUP,
        PTYRELAY_STATE_DIR: join(dir, 'state'),
        PTYRELAY_RUNTIME_DIR: join(dir, 'run'),
        PTYRELAY_CONFIG: configPath,
        PTYRELAY_LOG_LEVEL: 'debug',
      };
      delete env.VITEST; // the relay logs at the level asked, as in production
      serve = spawn(process.execPath, [MAIN, 'serve', '--listen', '127.0.0.1:0', '--json'], {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      let err = '';
      serve.stdout!.on('data', (d) => (out += d));
      serve.stderr!.on('data', (d) => (err += d));
      serve.once('close', () => {
        keep('serve stdout (pino)', out);
        keep('serve stderr', err);
      });
      // stdout carries the pino lines too; the --json banner is the line with the url.
      const banner = () => out.split('\n').find((l) => l.startsWith('{"url"'));
      relayUrl = JSON.parse(await waitFor(banner, 30_000, 'serve --json')).url;
      env.PTYRELAY_URL = relayUrl;
    });

    afterAll(async () => {
      if (serve && serve.exitCode === null) {
        serve.kill('SIGTERM');
        await new Promise((r) => serve!.once('close', r));
      }
      // The daemon this test deployed runs as the sshd user: stopped by pid, its dir removed.
      for (const pid of daemonPids()) {
        try {
          process.kill(pid, 'SIGTERM');
        } catch {
          // exited meanwhile
        }
      }
      await sshd?.stop();
      rmSync(runtimeDir, { recursive: true, force: true });
      rmSync(dir, { recursive: true, force: true });
    });

    /** Pids of daemons started with this test's remote runtime dir. */
    function daemonPids(): number[] {
      return readdirSync('/proc')
        .filter((n) => /^\d+$/.test(n))
        .filter((n) => {
          try {
            return readFileSync(`/proc/${n}/cmdline`, 'utf8').split('\0').includes(runtimeDir);
          } catch {
            return false; // exited while we looked
          }
        })
        .map(Number);
    }

    it('drives the relay through success and every secret-holding failure', async () => {
      // A scoped token, made by the real CLI: its value is the intended output of `create` only.
      const made = await cli([
        'token',
        'create',
        '--scope',
        'write',
        '--hosts',
        'key,badpp,pw,pwcmd',
        '--name',
        'planted',
      ]);
      expect(made.code).toBe(0);
      scoped = made.stdout.trim().split('\n').at(-1)!;
      expect(scoped).toMatch(/^ptr_/);
      const as = { PTYRELAY_TOKEN: scoped };

      // Success over the passphrase-protected key: deploy, a terminal, input, output.
      const opened = await cli(['open', 'key', '--json', '--', 'sh'], as);
      expect(opened.code, opened.stderr).toBe(0);
      const id = JSON.parse(opened.stdout).id as string;
      expect((await cli(['send', id, 'echo planted-$((6*7))'], as)).code).toBe(0);
      await expect
        .poll(async () => (await cli(['read', id], as)).stdout, { timeout: 20_000 })
        .toContain('planted-42');
      expect((await cli(['kill', id, '--now'], as)).code).toBe(0);

      // Failures that held a secret: wrong passphrase, refused passwords (plain and from a command).
      for (const host of ['badpp', 'pw', 'pwcmd']) {
        const r = await cli(['open', host, '--json', '--', 'sh'], as);
        expect([host, r.code]).toEqual([host, 1]);
        expect([host, JSON.parse(r.stderr).error.code]).toEqual([host, 'AUTH_FAILED']);
      }
      // Refusals: a wrong token, a scope the token lacks, an MCP request, a browser-style upgrade.
      const wrong = await cli(['hosts', '--json'], { PTYRELAY_TOKEN: WRONG_TOKEN });
      expect(wrong.code).toBe(1);
      const denied = await cli(['open', 'local', '--json'], as);
      expect(JSON.parse(denied.stderr).error.code).toBe('NOT_PERMITTED');
      const mcpUrl = relayUrl.replace(/^ws/, 'http') + '/mcp';
      for (const token of [scoped, WRONG_TOKEN]) {
        const res = await fetch(mcpUrl, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${token}`,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
          },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            method: 'initialize',
            params: {
              protocolVersion: '2025-03-26',
              capabilities: {},
              clientInfo: { name: 't', version: '1' },
            },
          }),
        });
        keep(`mcp answer to ${token === scoped ? 'scoped' : 'wrong'}`, await res.text());
      }
      await new Promise<void>((resolve) => {
        const ws = new WebSocket(relayUrl, ['ahp.v1', `ptyrelay.token.${STARTUP}`]);
        ws.once('open', () => ws.close());
        ws.once('close', () => resolve());
        ws.once('error', () => resolve());
      });
      expect((await cli(['token', 'revoke', 'planted'])).code).toBe(0);
      const afterRevoke = await cli(['hosts', '--json'], as);
      expect(afterRevoke.code).toBe(1);

      serve!.kill('SIGTERM');
      await new Promise((r) => serve!.once('close', r));
    });

    it('no captured text holds any planted secret', () => {
      for (const d of [join(dir, 'run'), runtimeDir]) {
        if (!existsSync(d)) continue;
        for (const f of readdirSync(d)) {
          const p = join(d, f);
          if (statSync(p).isFile()) keep(`daemon file ${p}`, readFileSync(p, 'utf8'));
        }
      }
      const relayLog = captured.find((c) => c.where === 'serve stdout (pino)')?.text ?? '';
      // The search covers real traffic: the relay logged connections, the deploy and the refusals.
      expect(relayLog).toContain('connection opened');
      expect(relayLog).toContain('"tokenName":"planted"');
      expect(relayLog).toContain('upgrade refused');
      expect(captured.some((c) => c.where.startsWith('daemon file'))).toBe(true);
      const secrets = [
        STARTUP,
        WRONG_TOKEN,
        scoped,
        // The secret part alone (`ptr_<12 hex>_<43 chars>`); split('_') cut it short when it held a '_'
        // and then matched unrelated text.
        scoped.slice('ptr_'.length + 12 + 1),
        PASSWORD,
        CMD_PASSWORD,
        PASSPHRASE,
        WRONG_PASSPHRASE,
        ...keyLines,
      ];
      const leaks: string[] = [];
      for (const c of captured) {
        for (const s of secrets) if (c.text.includes(s)) leaks.push(`${c.where} holds ${s.slice(0, 24)}…`);
      }
      expect(leaks).toEqual([]);
    });
  },
);
