import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PtyRelayError } from '../../provider/errors.js';
import { fromOwnPage } from '../../relay/web/page-origin.js';
import { WebAssets } from '../../relay/web/web-assets.js';

interface Reply {
  status: number;
  headers: IncomingMessage['headers'];
  body: string;
}

function get(
  port: number,
  path: string,
  headers: Record<string, string> = {},
  method = 'GET',
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers, method }, (res) => {
      let body = '';
      res.on('data', (c) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('WebAssets (the page served by the relay)', () => {
  let dir: string;
  let server: Server;
  let port: number;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ptr-assets-'));
    mkdirSync(join(dir, 'assets'));
    writeFileSync(join(dir, 'index.html'), '<meta property="csp-nonce" nonce="__CSP_NONCE__"><p>page</p>');
    writeFileSync(join(dir, 'assets', 'app-ABC123.js'), 'console.log(1)');
    writeFileSync(join(dir, 'secret.txt'), 'not listed');
    writeFileSync(
      join(dir, 'manifest.json'),
      JSON.stringify({ files: ['index.html', 'assets/app-ABC123.js'] }),
    );
    const web = new WebAssets(dir);
    server = createServer((req, res) => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      if (!web.handle(path, req, res)) {
        res.writeHead(404);
        res.end();
      }
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    await new Promise((r) => server.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves index.html uncached with a strict CSP whose style nonce is fresh per response', async () => {
    const a = await get(port, '/');
    const b = await get(port, '/');
    expect(a.status).toBe(200);
    expect(a.headers['cache-control']).toBe('no-cache, no-store');
    expect(a.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(a.headers['x-content-type-options']).toBe('nosniff');
    const csp = a.headers['content-security-policy'] as string;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    const nonce = /'nonce-([^']+)'/.exec(csp)![1]!;
    expect(a.body).toContain(`nonce="${nonce}"`);
    expect(b.body).not.toContain(`nonce="${nonce}"`);
    expect(a.body).not.toContain('__CSP_NONCE__');
  });

  it('serves hashed assets as immutable with an ETag, 304 on revalidation, no body for HEAD', async () => {
    const a = await get(port, '/assets/app-ABC123.js');
    expect(a.status).toBe(200);
    expect(a.body).toBe('console.log(1)');
    expect(a.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(a.headers['content-type']).toBe('text/javascript; charset=utf-8');
    const again = await get(port, '/assets/app-ABC123.js', { 'if-none-match': a.headers.etag as string });
    expect(again.status).toBe(304);
    const head = await get(port, '/assets/app-ABC123.js', {}, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.body).toBe('');
  });

  it('serves nothing outside the manifest', async () => {
    for (const p of [
      '/secret.txt',
      '/assets/../secret.txt',
      '/assets/%2e%2e/secret.txt',
      '/manifest.json',
      '/assets/x.js',
    ]) {
      expect((await get(port, p)).status, p).toBe(404);
    }
  });

  it('refuses a directory without a build as CONFIG_INVALID', () => {
    expect(() => new WebAssets(join(dir, 'assets'))).toThrow(PtyRelayError);
  });

  it('reads a file only when it is first asked for (an idle relay holds none), then keeps it', () => {
    const late = mkdtempSync(join(tmpdir(), 'ptr-assets-late-'));
    try {
      mkdirSync(join(late, 'assets'));
      writeFileSync(join(late, 'index.html'), '<p>page</p>');
      writeFileSync(
        join(late, 'manifest.json'),
        JSON.stringify({ files: ['index.html', 'assets/app-L1.js', 'assets/gone-G1.js'] }),
      );
      const web = new WebAssets(late); // the assets are not there yet
      writeFileSync(join(late, 'assets', 'app-L1.js'), 'first');
      const served = (path: string) => {
        let body = '';
        let status = 0;
        const res = {
          writeHead: (s: number) => {
            status = s;
          },
          end: (b?: Buffer) => {
            body = b ? b.toString() : '';
          },
        };
        const found = web.handle(path, { method: 'GET', headers: {} } as IncomingMessage, res as never);
        return found ? { status, body } : undefined;
      };
      expect(served('/assets/app-L1.js')).toEqual({ status: 200, body: 'first' });
      writeFileSync(join(late, 'assets', 'app-L1.js'), 'second');
      expect(served('/assets/app-L1.js')).toEqual({ status: 200, body: 'first' }); // kept once read
      expect(served('/assets/gone-G1.js')).toBeUndefined(); // listed, but not on disk: a 404
      expect(served('/')?.body).toBe('<p>page</p>');
    } finally {
      rmSync(late, { recursive: true, force: true });
    }
  });
});

describe('fromOwnPage (WebSocket Origin of the relay page)', () => {
  const req = (origin: string | undefined, host = '127.0.0.1:7681') =>
    ({ headers: { origin, host } }) as unknown as IncomingMessage;

  it('admits the loopback spellings of the listen address, and nothing else', () => {
    expect(fromOwnPage(req('http://127.0.0.1:7681'), '127.0.0.1', 7681)).toBe(true);
    expect(fromOwnPage(req('http://localhost:7681'), '127.0.0.1', 7681)).toBe(true);
    expect(fromOwnPage(req('http://[::1]:7681'), '::1', 7681)).toBe(true);
    expect(fromOwnPage(req('http://127.0.0.1:7682'), '127.0.0.1', 7681)).toBe(false);
    expect(fromOwnPage(req('https://evil.example'), '127.0.0.1', 7681)).toBe(false);
    expect(fromOwnPage(req(undefined), '127.0.0.1', 7681)).toBe(false);
  });

  it('on a wildcard listen address, admits only the Host the browser asked for', () => {
    expect(fromOwnPage(req('http://box:7681', 'box:7681'), '0.0.0.0', 7681)).toBe(true);
    expect(fromOwnPage(req('http://evil:7681', 'box:7681'), '0.0.0.0', 7681)).toBe(false);
  });
});
