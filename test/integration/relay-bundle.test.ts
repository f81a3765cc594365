import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { ServeProcess } from '../support/serve-process.js';

/**
 * The relay as `ptyrelay serve` runs it (dist/bin/ptyrelay.js, esbuild's bundle) loads node:http
 * through require (relay/core/node-http.ts): an ES import of it would read its lazy WebSocket,
 * CloseEvent and MessageEvent exports and load undici and http2, 13 MB of RSS the relay never uses.
 * A probe loaded with --import records which of Node's own modules the process loaded by its exit.
 */
describe('the bundled relay', () => {
  it('serves HTTP and WebSocket without loading undici or http2', async () => {
    const serve = new ServeProcess('ptr-bundle-');
    try {
      const probe = join(serve.root, 'probe.mjs');
      writeFileSync(
        probe,
        `import { writeFileSync } from 'node:fs';\nprocess.on('exit', () => writeFileSync(${JSON.stringify(
          join(serve.root, 'modules-'),
        )} + process.pid, process.moduleLoadList.join('\\n')));\n`,
      );
      serve.env.NODE_OPTIONS = `--import ${probe}`;
      await serve.start();
      const health = await fetch(`${serve.httpUrl}/healthz`, {
        headers: { authorization: `Bearer ${serve.token()}` },
      });
      expect(health.status).toBe(200);
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
      expect(loaded.filter((m) => /undici|http2/.test(m))).toEqual([]);
    } finally {
      await serve.cleanup();
    }
  }, 60_000);
});
