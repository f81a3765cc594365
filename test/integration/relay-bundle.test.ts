import { once } from 'node:events';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { heapTrimAddonPath } from '../../agent-stub/native/heap-trim.js';
import { stubBundlePath } from '../../relay/core/stub-bundle.js';
import { capability } from '../support/capabilities.js';
import { waitFor } from '../support/local-daemon.js';
import { ServeProcess } from '../support/serve-process.js';

const TRIM_ADDON = heapTrimAddonPath(stubBundlePath())!;
const trimAddon = capability(
  'malloc-trim',
  existsSync(TRIM_ADDON) ? undefined : `${TRIM_ADDON} was not built (no C compiler at build time)`,
);

/**
 * The relay as `ptyrelay serve` runs it (dist/bin/ptyrelay.js, esbuild's bundle) loads node:http
 * through require (relay/core/node-http.ts): an ES import of it would read its lazy WebSocket,
 * CloseEvent and MessageEvent exports and load undici and http2, 13 MB of RSS the relay never uses.
 * An idle relay that no client reached holds neither `ws` nor the tls, https, zlib and readline
 * modules only clients and some commands need (relay/service/relay-connections.ts loads ws with the
 * first upgrade). A probe loaded with --import records which of Node's own modules the process
 * loaded, at its exit and when it gets SIGUSR2.
 */
describe('the bundled relay', () => {
  /** A relay whose probe writes `modules-<pid>` at exit and `modules-<pid>-now` on SIGUSR2. */
  async function probedServe(config?: unknown): Promise<ServeProcess> {
    const serve = new ServeProcess('ptr-bundle-');
    const probe = join(serve.root, 'probe.mjs');
    const out = JSON.stringify(join(serve.root, 'modules-'));
    writeFileSync(
      probe,
      `import { writeFileSync } from 'node:fs';\n` +
        `const write = (tail) => writeFileSync(${out} + process.pid + tail, process.moduleLoadList.join('\\n'));\n` +
        `process.on('exit', () => write(''));\nprocess.on('SIGUSR2', () => write('-now'));\n`,
    );
    if (config !== undefined) writeFileSync(serve.configFile, JSON.stringify(config));
    serve.env.NODE_OPTIONS = `--import ${probe}`;
    await serve.start();
    return serve;
  }

  /** Node's own modules the relay has loaded by now. */
  async function loadedNow(serve: ServeProcess): Promise<string[]> {
    const file = join(serve.root, `modules-${serve.proc!.pid}-now`);
    serve.proc!.kill('SIGUSR2');
    for (let i = 0; i < 100; i++) {
      try {
        return readFileSync(file, 'utf8').split('\n');
      } catch {
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    throw new Error('the probe wrote no module list');
  }

  it('serves HTTP and WebSocket without loading undici or http2; idle, without ws, tls, zlib or readline', async () => {
    const serve = await probedServe();
    try {
      const health = await fetch(`${serve.httpUrl}/healthz`, {
        headers: { authorization: `Bearer ${serve.token()}` },
      });
      expect(health.status).toBe(200);
      const idle = await loadedNow(serve);
      expect(idle).toContain('NativeModule http');
      expect(idle.filter((m) => /^NativeModule (tls|https|zlib|readline)/.test(m))).toEqual([]);
      const ws = new WebSocket(serve.url, { headers: { authorization: `Bearer ${serve.token()}` } });
      await once(ws, 'open');
      ws.close();
      await once(ws, 'close');
      const proc = serve.proc;
      const pid = proc?.pid;
      const exited = proc ? once(proc, 'exit') : undefined;
      proc?.kill('SIGINT'); // a graceful stop: the probe writes its list at the exit
      await exited;
      const loaded = readFileSync(join(serve.root, `modules-${pid}`), 'utf8').split('\n');
      expect(loaded).toContain('NativeModule http');
      expect(loaded).toContain('NativeModule zlib'); // ws, loaded for the first client
      expect(loaded.filter((m) => /undici|http2/.test(m))).toEqual([]);
    } finally {
      await serve.cleanup();
    }
  }, 60_000);

  it('upgrades that arrive together while ws loads still count against limits.maxConnections', async () => {
    const serve = await probedServe({ limits: { maxConnections: 2 } });
    try {
      const { port } = new URL(serve.httpUrl);
      const token = serve.token();
      // Raw handshakes written together on connected sockets, so they arrive while the first one
      // loads ws (on Node 24 that import settles within the same turn; the relay counts upgrades
      // waiting for it all the same). The sockets stay open until every answer is in (a closed
      // connection would free its place).
      const sockets = Array.from({ length: 5 }, () => connect(Number(port), '127.0.0.1'));
      await Promise.all(sockets.map((s) => once(s, 'connect')));
      const answers = await Promise.all(
        sockets.map((s, i) => {
          s.write(
            'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n' +
              `Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${Buffer.alloc(16, i).toString('base64')}\r\n` +
              `Authorization: Bearer ${token}\r\n\r\n`,
          );
          return new Promise<string>((resolve) => {
            let text = '';
            s.on('data', (d) => {
              text += d.toString('latin1');
              if (text.includes('\r\n\r\n')) resolve(text.split('\r\n')[0]!);
            });
            s.on('close', () => resolve(text.split('\r\n')[0] ?? ''));
          });
        }),
      );
      for (const s of sockets) s.destroy();
      expect(answers.filter((a) => a.startsWith('HTTP/1.1 101')).length).toBe(2);
      expect(answers.filter((a) => a.startsWith('HTTP/1.1 503')).length).toBe(3);
    } finally {
      await serve.cleanup();
    }
  }, 60_000);

  it.skipIf(!trimAddon)(
    'gives back what its start freed in the malloc heaps once it is quiet',
    async () => {
      const serve = new ServeProcess('ptr-bundle-');
      serve.env.PTYRELAY_LOG_LEVEL = 'debug';
      try {
        await serve.start();
        // relay/core/heap-trim.ts: the start counts as a busy spell; the first quiet second trims.
        const line = await waitFor(
          () => serve.stdout.split('\n').find((l) => l.includes('"msg":"heap trimmed"')),
          15_000,
          "the relay's heap trim",
        );
        const entry = JSON.parse(line) as { why: string; rssBefore: number; rssAfter: number };
        expect(entry.why).toBe('quiet');
        expect(entry.rssAfter).toBeGreaterThan(0);
        expect(serve.stdout).not.toContain('the relay runs without heap trimming');
      } finally {
        await serve.cleanup();
      }
    },
    60_000,
  );
});
