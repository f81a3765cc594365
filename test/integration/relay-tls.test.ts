import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { get } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { RelayClient } from '../../provider/client/relay-client.js';
import { isPtyRelayError } from '../../provider/errors.js';
import { LocalPtyProvider } from '../../relay/local/local-pty-provider.js';
import { routerOver } from '../../relay/service/host-router.js';
import { createPtyExtension } from '../../relay/service/pty-extension.js';
import { type RelayServer, startRelayServer } from '../../relay/service/relay-server.js';
import { TerminalRegistry } from '../../relay/terminals/terminal-registry.js';
import { capability, filesMissing } from '../support/capabilities.js';
import { type LocalFixture, startLocal } from '../support/local-daemon.js';
import { TEST_TOKEN } from '../support/relay-fixture.js';

const OPENSSL = '/usr/bin/openssl';
const MAIN = join(import.meta.dirname, '..', '..', 'dist', 'bin', 'ptyrelay.js');
const available = capability(
  'openssl',
  filesMissing([OPENSSL], 'needed to make a self-signed certificate; apt-get install openssl'),
);

/** A self-signed certificate for 127.0.0.1 and localhost, made for this test run. */
function selfSigned(dir: string): { cert: string; key: string } {
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  execFileSync(
    OPENSSL,
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '1',
      '-keyout',
      key,
      '-out',
      cert,
      '-subj',
      '/CN=ptyrelay-test',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  chmodSync(key, 0o600);
  return { cert, key };
}

function httpsGet(url: string, ca: Buffer, token?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = get(url, { ca, headers: token ? { authorization: `Bearer ${token}` } : {} }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
  });
}

function wsOutcome(url: string, opts: WebSocket.ClientOptions): Promise<string> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, opts);
    ws.once('open', () => {
      ws.close();
      resolve('open');
    });
    ws.once('error', (e) => resolve((e as NodeJS.ErrnoException).code ?? e.message));
    ws.once('unexpected-response', (_q, res) => {
      resolve(`http ${res.statusCode}`);
      ws.terminate();
    });
  });
}

describe.skipIf(!available)('TLS and the listen address', { timeout: 120_000 }, () => {
  let dir: string;
  let tls: { cert: string; key: string };
  let ca: Buffer;
  let local: LocalFixture;
  let provider: LocalPtyProvider;
  let server: RelayServer | undefined;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ptr-tls-'));
    tls = selfSigned(dir);
    ca = readFileSync(tls.cert);
    local = await startLocal();
    provider = new LocalPtyProvider({ runtimeDir: local.runtimeDir });
  });
  afterAll(async () => {
    await server?.close();
    await provider?.dispose();
    await local?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  const router = () => routerOver({ local: provider });

  it('serves wss and https with a self-signed certificate; a client trusting it drives a terminal', async () => {
    const registry = new TerminalRegistry();
    const r = router();
    server = await startRelayServer({
      listen: { host: '127.0.0.1', port: 0 },
      token: TEST_TOKEN,
      tls,
      router: r,
      registry,
      extensions: [createPtyExtension({ router: r, registry })],
    });
    expect(server.url).toMatch(/^wss:\/\/127\.0\.0\.1:\d+$/);
    expect(server.httpUrl).toMatch(/^https:/);
    expect(await httpsGet(`${server.httpUrl}/healthz`, ca)).toEqual({ status: 200, body: '{"ok":true}' });

    const client = new RelayClient({ url: server.url, token: TEST_TOKEN, ca });
    try {
      const t = await client.spawn({ cols: 80, rows: 24, command: 'sh' });
      let out = '';
      client.onData((e) => {
        if (e.id === t.id) out += Buffer.from(e.data).toString();
      });
      await client.write(t.id, 'echo tls-$((6*7))\r');
      await expect.poll(() => out, { timeout: 10_000 }).toContain('tls-42');
      await client.shutdown(t.id, { immediate: true });
    } finally {
      await client.dispose();
    }

    // Without trusting the certificate, or in clear text, nothing connects.
    const headers = { authorization: `Bearer ${TEST_TOKEN}` };
    expect(await wsOutcome(server.url, { headers })).toBe('DEPTH_ZERO_SELF_SIGNED_CERT');
    expect(await wsOutcome(server.url.replace('wss:', 'ws:'), { headers })).not.toBe('open');
    expect(await wsOutcome(server.url, { headers, ca })).toBe('open');
    await server.close();
    server = undefined;
  });

  it('refuses a listen address beyond loopback without TLS; accepts it with TLS or --insecure-listen', async () => {
    const opts = { token: TEST_TOKEN, router: router(), registry: new TerminalRegistry() };
    for (const host of ['0.0.0.0', '::', '192.0.2.1', 'example.com']) {
      const err = await startRelayServer({ ...opts, listen: { host, port: 0 } }).catch((e: unknown) => e);
      expect([host, isPtyRelayError(err) ? err.code : String(err)]).toEqual([host, 'INSECURE_LISTEN']);
      expect((err as Error).message).toContain('--tls-cert');
    }
    for (const extra of [{ tls }, { insecureListen: true }]) {
      const s = await startRelayServer({ ...opts, listen: { host: '0.0.0.0', port: 0 }, ...extra });
      await s.close();
    }
    for (const host of ['127.0.0.1', '127.8.9.10', 'localhost']) {
      const s = await startRelayServer({ ...opts, listen: { host, port: 0 } }).catch((e: Error) => e);
      expect([host, s instanceof Error ? s.message : 'listening']).toEqual([host, 'listening']);
      if (!(s instanceof Error)) await s.close();
    }
  });

  it('a TLS key others can read is refused with the fix', async () => {
    const loose = join(dir, 'loose');
    mkdirSync(loose);
    const pair = selfSigned(loose);
    chmodSync(pair.key, 0o644);
    const err = await startRelayServer({
      token: TEST_TOKEN,
      router: router(),
      registry: new TerminalRegistry(),
      listen: { host: '127.0.0.1', port: 0 },
      tls: pair,
    }).catch((e: unknown) => e);
    expect(isPtyRelayError(err, 'INSECURE_FILE_MODE')).toBe(true);
    expect((err as Error).message).toContain(`chmod 600 ${pair.key}`);
  });

  it('`ptyrelay serve`: refuses 0.0.0.0 in clear text; serves wss with --tls-cert/--tls-key', async () => {
    const home = join(dir, 'home');
    mkdirSync(home);
    const env = {
      ...process.env,
      HOME: home,
      PTYRELAY_TOKEN: TEST_TOKEN,
      PTYRELAY_STATE_DIR: join(dir, 'state'),
      PTYRELAY_RUNTIME_DIR: local.runtimeDir,
      PTYRELAY_LOG_LEVEL: 'warn',
    };
    const refused = spawnSync(process.execPath, [MAIN, 'serve', '--listen', '0.0.0.0:0'], {
      env,
      encoding: 'utf8',
    });
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain('INSECURE_LISTEN');
    const child = spawn(
      process.execPath,
      [MAIN, 'serve', '--listen', '127.0.0.1:0', '--tls-cert', tls.cert, '--tls-key', tls.key, '--json'],
      { env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    try {
      let out = '';
      child.stdout.on('data', (d) => (out += d));
      await expect.poll(() => out.includes('\n'), { timeout: 20_000 }).toBe(true);
      const info = JSON.parse(out.split('\n')[0]!);
      expect(info.url).toMatch(/^wss:\/\/127\.0\.0\.1:\d+$/);
      expect(await wsOutcome(info.url, { headers: { authorization: `Bearer ${TEST_TOKEN}` }, ca })).toBe(
        'open',
      );
      // The relay's own page over https may open its WebSocket (same origin).
      const origin = info.httpUrl as string;
      expect(
        await wsOutcome(info.url, { headers: { authorization: `Bearer ${TEST_TOKEN}` }, ca, origin }),
      ).toBe('open');
      // `ptyrelay mcp --ca FILE` reaches /mcp over https trusting the self-signed certificate.
      const mcpEnv = { ...env, PTYRELAY_URL: info.url } as Record<string, string>;
      delete mcpEnv.NODE_EXTRA_CA_CERTS;
      delete mcpEnv.PTYRELAY_CA;
      const viaCa = new Client({ name: 'tls-mcp', version: '1.0.0' });
      await viaCa.connect(
        new StdioClientTransport({
          command: process.execPath,
          args: [MAIN, 'mcp', '--ca', tls.cert],
          env: mcpEnv,
        }),
      );
      try {
        const listed = await viaCa.callTool({ name: 'terminal_list', arguments: {} });
        expect((listed.content as { text: string }[])[0]?.text).toBe('no terminals');
      } finally {
        await viaCa.close();
      }
      // Without it the certificate is not trusted: the bridge cannot reach the relay.
      const untrusted = new Client({ name: 'tls-mcp-untrusted', version: '1.0.0' });
      const refused = await untrusted
        .connect(
          new StdioClientTransport({
            command: process.execPath,
            args: [MAIN, 'mcp'],
            env: mcpEnv,
            stderr: 'pipe',
          }),
        )
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      await untrusted.close();
      expect(String(refused)).toMatch(/relay|certificate|fetch failed|self[- ]signed/i);
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('close', r));
    }
  });
});
