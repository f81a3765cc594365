// Entry of `npm run bench`: bundles bench/main.ts (and the TypeScript sources it imports) with esbuild
// into bench/out/bench.mjs, then runs it in this process. npm packages stay external (node_modules).
//   node bench/run.mjs [--quick] [--only flood,typing,...] [--out DIR]
import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build, stop } from 'esbuild';

const benchDir = dirname(fileURLToPath(import.meta.url));
const outfile = join(benchDir, 'out', 'bench.mjs');
mkdirSync(dirname(outfile), { recursive: true });
// bench/out is gitignored but biome does not read .gitignore: keep bundles and profiles out of lint.
writeFileSync(join(benchDir, 'out', 'biome.json'), '{ "root": false, "files": { "includes": ["!**"] } }\n');
const require = createRequire(import.meta.url);

/**
 * Node's ESM loader cannot see every named export of some CommonJS packages (`utils` of ssh2), so
 * `import { utils } from 'ssh2'` in the sources fails outside vitest. Imports of these packages go
 * through a generated shim that re-exports the CommonJS object's keys; the package itself stays external.
 */
const CJS_NAMED_EXPORTS = ['ssh2'];
const cjsNamedExports = {
  name: 'cjs-named-exports',
  setup(b) {
    const filter = new RegExp(`^(${CJS_NAMED_EXPORTS.join('|')})$`);
    b.onResolve({ filter }, (args) =>
      args.namespace === 'cjs-shim'
        ? { path: args.path, external: true }
        : { path: args.path, namespace: 'cjs-shim' },
    );
    b.onLoad({ filter: /.*/, namespace: 'cjs-shim' }, (args) => {
      const keys = Object.keys(require(args.path)).filter(
        (k) => /^[A-Za-z_$][\w$]*$/.test(k) && k !== 'default',
      );
      const lines = [`import m from '${args.path}';`, 'export default m;'];
      for (const k of keys) lines.push(`export const ${k} = m.${k};`);
      return { contents: lines.join('\n'), loader: 'js', resolveDir: benchDir };
    });
  },
};

// bench.mjs runs here; relay.mjs is the relay service the bench starts as a process of its own.
await build({
  entryPoints: { bench: join(benchDir, 'main.ts'), relay: join(benchDir, 'relay-main.ts') },
  outdir: dirname(outfile),
  outExtension: { '.js': '.mjs' },
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  packages: 'external',
  sourcemap: 'linked',
  logLevel: 'warning',
  plugins: [cjsNamedExports],
});

// esbuild's service (a Go process of its own) would otherwise live as long as this one, its
// runtime waking a core every few ms while the scenarios measure (a scheduler trace of the typing
// scenario: 48 of its threads' runs inside the bursts' 1 s).
await stop();

const { main } = await import(pathToFileURL(outfile).href);
process.exitCode = await main(process.argv.slice(2));
