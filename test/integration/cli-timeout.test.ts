import { execFile } from 'node:child_process';
import net from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_ONE_SHOT_TIMEOUT_S, parseTimeout } from '../../relay/cli/one-shot-timeout.js';

const MAIN = join(import.meta.dirname, '..', '..', 'dist', 'bin', 'ptyrelay.js');

function cli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stderr: string; ms: number }> {
  const t0 = Date.now();
  return new Promise((resolve) => {
    execFile(process.execPath, [MAIN, ...args], { env, timeout: 30_000 }, (err, _stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stderr, ms: Date.now() - t0 });
    });
  });
}

describe('one-shot commands take --timeout', () => {
  /** A "relay" that accepts connections and never answers (a hung peer). */
  let silent: net.Server;
  const sockets = new Set<net.Socket>();
  let env: NodeJS.ProcessEnv;
  beforeAll(async () => {
    silent = net.createServer((s) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    });
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const { port } = silent.address() as net.AddressInfo;
    env = { ...process.env, PTYRELAY_URL: `ws://127.0.0.1:${port}`, PTYRELAY_TOKEN: 'x' };
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => silent.close(r));
  });

  it('gives up after --timeout seconds with TIMEOUT and exit code 1', async () => {
    const r = await cli(['read', 'box/pty-1', '--timeout', '1'], env);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('TIMEOUT: read did not finish within 1 s (--timeout)');
    // It was the timer, not the WebSocket handshake limit (10 s, then CONNECT_FAILED).
    expect(r.stderr).not.toContain('CONNECT_FAILED');
  });

  it('rejects a bad --timeout as a usage error (exit 2)', async () => {
    const r = await cli(['ls', '--timeout', 'soon'], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--timeout takes a number of seconds');
  });

  it('defaults to 30 s and reads seconds', () => {
    expect(parseTimeout(undefined)).toBe(DEFAULT_ONE_SHOT_TIMEOUT_S * 1000);
    expect(DEFAULT_ONE_SHOT_TIMEOUT_S).toBe(30);
    expect(parseTimeout('2.5')).toBe(2500);
    expect(() => parseTimeout('0')).toThrow(/seconds > 0/);
  });
});
