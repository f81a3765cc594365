import { Agent, request as httpsRequest } from 'node:https';
import { Readable } from 'node:stream';
import { http } from '../core/node-http.js';

/** Statuses whose Response may not have a body. */
const NO_BODY = new Set([101, 204, 205, 304]);

/**
 * A `fetch` for the MCP SDK's HTTP transport that trusts `ca` for https (a relay's self-signed
 * certificate): Node's global fetch takes no CA option, and NODE_EXTRA_CA_CERTS must be set
 * before the process starts. Enough of fetch for that transport: method, headers, a string or
 * byte body, an abort signal, a streamed response body (its SSE streams).
 */
export function fetchTrusting(ca: Buffer): typeof fetch {
  const agent = new Agent({ ca, keepAlive: true });
  return (input, init) =>
    new Promise<Response>((resolve, reject) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      const headers: Record<string, string> = {};
      new Headers(init?.headers).forEach((v, k) => {
        headers[k] = v;
      });
      const opts = { method: init?.method ?? 'GET', headers, signal: init?.signal ?? undefined };
      const onResponse = (res: import('node:http').IncomingMessage) => {
        const out = new Headers();
        for (const [k, v] of Object.entries(res.headers)) {
          if (Array.isArray(v)) for (const one of v) out.append(k, one);
          else if (v !== undefined) out.set(k, v);
        }
        const status = res.statusCode ?? 502;
        const body = NO_BODY.has(status) ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>);
        if (!body) res.resume();
        resolve(new Response(body, { status, statusText: res.statusMessage ?? '', headers: out }));
      };
      const req =
        url.protocol === 'https:'
          ? httpsRequest(url, { ...opts, agent }, onResponse)
          : http.request(url, opts, onResponse);
      req.on('error', reject);
      const body = init?.body;
      if (body === undefined || body === null) req.end();
      else if (typeof body === 'string' || body instanceof Uint8Array) req.end(body);
      else reject(new TypeError('fetchTrusting: only string or byte bodies are supported'));
    });
}
