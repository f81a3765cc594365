import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeInputFrame } from '../../provider/wire/frame-codec.js';
import { CLOSE_TOKEN_ENDED } from '../../relay/service/relay-server.js';
import { connect, type TestClient } from '../support/relay-test-support.js';
import { type ScopedRelay, STARTUP_TOKEN, startScopedRelay } from '../support/scoped-relay.js';

/** A revoked or expired token's connections close within this long (the bound). */
const REVOKE_BOUND_MS = 1000;
const MAIN = join(import.meta.dirname, '..', '..', 'dist', 'bin', 'ptyrelay.js');
const run = promisify(execFile);

describe('token lifecycle: the CLI, revocation, expiry, audit', { timeout: 120_000 }, () => {
  let fx: ScopedRelay;
  let t1: string;

  beforeAll(async () => {
    fx = await startScopedRelay();
    const admin = await fx.client(STARTUP_TOKEN);
    t1 = (
      await admin.request('ptyrelay/spawn', {
        host: 'local',
        cols: 80,
        rows: 24,
        command: 'sh',
        requestId: 'lifecycle-1',
      })
    ).id;
  });
  afterAll(async () => {
    await fx?.cleanup();
  });

  const cli = (...args: string[]) =>
    run(process.execPath, [MAIN, ...args], { env: { ...process.env, PTYRELAY_STATE_DIR: fx.stateDir } });

  const closedWithin = (c: TestClient, ms: number) => c.waitFor(() => c.closed, 'close', ms);

  it('`token create` prints the token last; a running relay takes it at once; `ls` never shows it', async () => {
    const { stdout } = await cli(
      'token',
      'create',
      '--scope',
      'write',
      '--hosts',
      'local',
      '--name',
      'cli-made',
      '--ttl',
      '1h',
    );
    const token = stdout.trim().split('\n').at(-1)!;
    expect(token).toMatch(/^ptr_[0-9a-f]{12}_/);
    const c = await fx.client(token);
    expect((await c.call('ptyrelay/resize', { id: t1, cols: 80, rows: 24 })).error).toBeUndefined();
    const ls = await cli('token', 'ls');
    expect(ls.stdout).toMatch(/cli-made\s+write\s+local\s+\d{4}-/);
    expect(ls.stdout).not.toContain(token);
    const json = JSON.parse((await cli('token', 'ls', '--json')).stdout);
    // The secret is everything after `ptr_<id>_` (base64url: it may itself contain `_`).
    const secret = token.split('_').slice(2).join('_');
    expect(secret).toHaveLength(43);
    expect(JSON.stringify(json)).not.toContain(secret);
    expect(JSON.stringify(json)).not.toContain('sha256');
    c.close();
  });

  it('`token revoke` (another process) closes live connections within a second; the token is refused after', async () => {
    const token = fx.mint('to-revoke', { scope: 'read' });
    const a = await fx.client(token);
    const b = await fx.client(token);
    const other = await fx.client(fx.tokens.viewer!);
    await cli('token', 'revoke', 'to-revoke');
    const revokedAt = Date.now();
    await closedWithin(a, REVOKE_BOUND_MS + 500);
    await closedWithin(b, REVOKE_BOUND_MS + 500);
    expect(Date.now() - revokedAt).toBeLessThan(REVOKE_BOUND_MS);
    expect(a.closed?.code).toBe(CLOSE_TOKEN_ENDED);
    expect(((await connect(fx.server.url, { token })) as { status: number }).status).toBe(401);
    const mcp = await fetch(fx.mcpUrl, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
      body: '{}',
    });
    expect(mcp.status).toBe(401);
    // Another token's connection is untouched.
    expect(other.closed).toBeUndefined();
    expect((await other.request('ptyrelay/hosts')).hosts.length).toBe(2);
  });

  it('an expired token is refused, and its open connection closed within a second of expiry', async () => {
    const ttlMs = 1500;
    const token = fx.mint('short', { scope: 'read', ttlMs });
    const expiresAt = Date.now() + ttlMs;
    const c = await fx.client(token);
    await closedWithin(c, ttlMs + REVOKE_BOUND_MS + 1000);
    expect(Date.now() - expiresAt).toBeLessThan(REVOKE_BOUND_MS);
    expect(c.closed?.code).toBe(CLOSE_TOKEN_ENDED);
    expect(((await connect(fx.server.url, { token })) as { status: number }).status).toBe(401);
    expect((await cli('token', 'ls')).stdout).toMatch(/short\s+read\s+\*\s+expired/);
  });

  it('input is audited per token and terminal with byte counts, never the bytes; logs never hold a token', async () => {
    const token = fx.mint('typist', { scope: 'write', hosts: ['local'] });
    const c = await fx.client(token);
    const typed = ['echo audit-typed-secret\r', 'true\r'];
    for (const [i, t] of typed.entries()) c.ws.send(encodeInputFrame(t1, i + 1, Buffer.from(t)));
    await c.waitFor(
      () =>
        c.notifications.some(
          (n) => n.method === 'ptyrelay/inputAck' && (n.params as { upTo: number }).upTo === 2,
        ),
      'acks',
    );
    await c.request('ptyrelay/agentSend', { id: t1, data: 'echo via-agent\r', timeoutMs: 2000 });
    fx.auth.audit.flush();
    const audit = fx.log.lines().filter((l) => l.audit === 'input' && l.tokenName === 'typist');
    expect(audit).toHaveLength(1);
    const bytes = typed.reduce((n, t) => n + t.length, 0) + 'echo via-agent\r'.length;
    expect(audit[0]).toMatchObject({ scope: 'write', terminal: t1, bytes, writes: 3 });
    const opened = fx.log.lines().find((l) => l.msg === 'connection opened' && l.tokenName === 'typist');
    expect(opened).toMatchObject({ scope: 'write' });
    const text = fx.log.text();
    expect(text).not.toContain('audit-typed-secret');
    for (const t of [STARTUP_TOKEN, ...Object.values(fx.tokens)]) expect(text).not.toContain(t);
  });
});
