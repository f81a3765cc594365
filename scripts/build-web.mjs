// Builds the web page (web/) into dist/web/: content-hashed assets under assets/, index.html
// naming them, and manifest.json listing every file the relay may serve (relay/web/web-assets.ts).
//   node scripts/build-web.mjs [--out DIR]
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

export async function buildWeb(outDir = join(root, 'dist', 'web')) {
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(join(outDir, 'assets'), { recursive: true });
  const result = await build({
    entryPoints: { app: join(root, 'web', 'main.ts') },
    outdir: join(outDir, 'assets'),
    entryNames: '[name]-[hash]',
    assetNames: '[name]-[hash]',
    bundle: true,
    platform: 'browser',
    format: 'esm',
    target: ['chrome110', 'firefox115', 'safari16'],
    minify: true,
    sourcemap: false,
    metafile: true,
    legalComments: 'none',
    logLevel: 'warning',
  });
  const outputs = Object.keys(result.metafile.outputs).map((p) => relative(outDir, join(root, p)));
  const js = outputs.find((p) => p.endsWith('.js'));
  const css = outputs.find((p) => p.endsWith('.css'));
  if (!js || !css) throw new Error(`web build produced no ${js ? 'CSS' : 'JS'} bundle`);
  const html = readFileSync(join(root, 'web', 'index.html'), 'utf8')
    .replace('__APP_JS__', `/${js}`)
    .replace('__APP_CSS__', `/${css}`);
  writeFileSync(join(outDir, 'index.html'), html);
  const files = ['index.html', ...outputs].map((p) => p.split('\\').join('/'));
  writeFileSync(join(outDir, 'manifest.json'), `${JSON.stringify({ files }, null, 2)}\n`);
  return { outDir, files };
}

if (process.argv[1] && basename(process.argv[1]) === 'build-web.mjs') {
  const i = process.argv.indexOf('--out');
  await buildWeb(i > 0 ? process.argv[i + 1] : undefined);
}
