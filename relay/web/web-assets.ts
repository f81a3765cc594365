import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as z from 'zod/mini';
import { PtyRelayError } from '../../provider/errors.js';

/**
 * The web page's static files (built by scripts/build-web.mjs into dist/web/), served from
 * memory once first asked for (a relay nobody opens the page of does not hold them): `/` is
 * index.html (never cached, a fresh CSP nonce per response), `/assets/<name>-<hash>.*` are
 * content-hashed and cached for a year. Only files listed in the build's manifest exist.
 */

/** Hashed assets never change under their name. */
const IMMUTABLE = 'public, max-age=31536000, immutable';
const NONCE_PLACEHOLDER = '__CSP_NONCE__';

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
};

const ManifestSchema = z.object({ files: z.array(z.string().check(z.regex(/^[A-Za-z0-9._/-]+$/))) });

/**
 * The page's Content-Security-Policy. Scripts and stylesheets only from this origin; `<style>`
 * elements need the response's nonce (xterm.js creates its theme styles at run time and the page
 * hands them the nonce); style *attributes* are allowed because xterm's DOM renderer writes
 * true-colour cells as `style="color: #…"`, which cannot carry a nonce. No frames, no plugins,
 * no base or form targets, WebSocket only back to this origin.
 */
export function contentSecurityPolicy(nonce: string): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    `style-src-elem 'self' 'nonce-${nonce}'`,
    "style-src-attr 'unsafe-inline'",
    "connect-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
    "object-src 'none'",
  ].join('; ');
}

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

/** Where the built page is: dist/web next to the compiled relay, or under the repo when run from source. */
export function defaultWebRoot(): string | undefined {
  const candidates = [
    fileURLToPath(new URL('../../web/', import.meta.url)),
    fileURLToPath(new URL('../../dist/web/', import.meta.url)),
  ];
  return candidates.find((dir) => existsSync(join(dir, 'manifest.json')));
}

/** The page's files, each read once when first asked for; `handle` answers a GET/HEAD for them. */
export class WebAssets {
  /** The manifest's files by path; undefined until read. */
  private readonly assets = new Map<string, Asset | undefined>();
  private indexTemplate: string | undefined;

  constructor(readonly root: string) {
    let manifest: z.infer<typeof ManifestSchema>;
    try {
      manifest = ManifestSchema.parse(JSON.parse(readFileSync(join(root, 'manifest.json'), 'utf8')));
    } catch (err) {
      throw new PtyRelayError('CONFIG_INVALID', `no usable web build in ${root}: ${(err as Error).message}`);
    }
    for (const file of manifest.files)
      if (!file.split('/').includes('..')) this.assets.set(`/${file}`, undefined);
    if (!this.assets.has('/index.html'))
      throw new PtyRelayError('CONFIG_INVALID', `${root}/manifest.json lists no index.html`);
    if (!existsSync(join(root, 'index.html')))
      throw new PtyRelayError('CONFIG_INVALID', `${root}/manifest.json lists index.html, which is missing`);
  }

  /** The manifest's file at `path`, read on first use; undefined when unlisted or gone from disk. */
  private asset(path: string): Asset | undefined {
    if (!this.assets.has(path)) return undefined;
    let asset = this.assets.get(path);
    if (asset) return asset;
    let body: Buffer;
    try {
      body = readFileSync(join(this.root, path.slice(1)));
    } catch {
      return undefined; // the build was replaced under the running relay: the file is gone
    }
    asset = {
      body,
      type: CONTENT_TYPES[extname(path)] ?? 'application/octet-stream',
      etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
    };
    this.assets.set(path, asset);
    return asset;
  }

  /** Answers `path` and returns true, or returns false when it is not a page file. */
  handle(path: string, req: IncomingMessage, res: ServerResponse): boolean {
    const common = {
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      'cross-origin-opener-policy': 'same-origin',
      'cross-origin-resource-policy': 'same-origin',
    };
    if (path === '/' || path === '/index.html') {
      this.indexTemplate ??= this.asset('/index.html')?.body.toString('utf8');
      if (this.indexTemplate === undefined) return false;
      const nonce = randomBytes(16).toString('base64');
      const body = Buffer.from(this.indexTemplate.split(NONCE_PLACEHOLDER).join(nonce));
      res.writeHead(200, {
        ...common,
        'content-type': CONTENT_TYPES['.html']!,
        'content-length': body.length,
        'cache-control': 'no-cache, no-store',
        'content-security-policy': contentSecurityPolicy(nonce),
        'x-frame-options': 'DENY',
      });
      res.end(req.method === 'HEAD' ? undefined : body);
      return true;
    }
    const asset = path.startsWith('/assets/') ? this.asset(path) : undefined;
    if (!asset) return false;
    if (req.headers['if-none-match'] === asset.etag) {
      res.writeHead(304, { ...common, etag: asset.etag, 'cache-control': IMMUTABLE });
      res.end();
      return true;
    }
    res.writeHead(200, {
      ...common,
      'content-type': asset.type,
      'content-length': asset.body.length,
      'cache-control': IMMUTABLE,
      etag: asset.etag,
    });
    res.end(req.method === 'HEAD' ? undefined : asset.body);
    return true;
  }
}
