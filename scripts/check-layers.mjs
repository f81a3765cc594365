// Checks the import structure of the product code (provider/, agent-stub/, relay/, web/, bench/)
// against the layer order written in docs/architecture.md ("Layers"), with the TypeScript
// compiler's own parser (`import type` and dynamic `import()` included):
//   - no file imports itself back through other files (a file circle);
//   - no folder imports a folder that imports it back (a folder circle);
//   - no import reaches a folder of a higher layer, or of the same layer (but its own folder).
// Exits 1 with one line per problem; `npm run lint` runs it.
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { productSources } from './lib/product-sources.mjs';

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..');
const TREES = ['provider', 'agent-stub', 'relay', 'web', 'bench'];

/** Every .ts file of the product trees (tests and generated output are not part of the layout). */
const sources = (root) => productSources(root, TREES);

/** The product files `file` imports (relative specifiers only: packages are not layers). */
function importsOf(root, file, known) {
  const info = ts.preProcessFile(readFileSync(join(root, file), 'utf8'), true, true);
  const out = new Set();
  for (const { fileName } of info.importedFiles) {
    if (!fileName.startsWith('.')) continue;
    const target = relative(root, resolve(root, dirname(file), fileName)).replace(/\.js$/, '.ts');
    if (known.has(target)) out.add(target);
    else if (known.has(join(target, 'index.ts'))) out.add(join(target, 'index.ts'));
  }
  return [...out];
}

/** The layer table of docs/architecture.md: rows `| N | `folder`, `folder` (a comment) |`, top layer first. */
function layerOrder(root) {
  const text = readFileSync(join(root, 'docs', 'architecture.md'), 'utf8');
  const section = text.split(/^## /m).find((s) => s.startsWith('Layers'));
  if (!section) throw new Error('docs/architecture.md has no "## Layers" section');
  const rank = new Map();
  for (const line of section.split('\n')) {
    const m = /^\|\s*(\d+)\s*\|\s*([^|]+)\|/.exec(line);
    if (!m) continue;
    // The folders are the cell's `code` spans; anything else in it is a comment.
    for (const [, folder] of m[2].matchAll(/`([^`]+)`/g)) rank.set(folder.replace(/\/$/, ''), Number(m[1]));
  }
  if (rank.size === 0) throw new Error('docs/architecture.md "Layers" lists no folders');
  return rank;
}

/** The most specific folder of the layer table that holds `file`. */
function folderOf(file, rank) {
  let dir = dirname(file);
  while (dir !== '.' && !rank.has(dir)) dir = dirname(dir);
  return dir === '.' ? undefined : dir;
}

/** Strongly connected components with more than one node (Tarjan). */
function circles(graph) {
  let index = 0;
  const idx = new Map();
  const low = new Map();
  const stack = [];
  const on = new Set();
  const out = [];
  const visit = (v) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
    }
    if (low.get(v) === idx.get(v)) {
      const comp = [];
      let w;
      do {
        w = stack.pop();
        on.delete(w);
        comp.push(w);
      } while (w !== v);
      if (comp.length > 1) out.push(comp.sort());
    }
  };
  for (const v of graph.keys()) if (!idx.has(v)) visit(v);
  return out;
}

/** The problems of the tree at `root` (its docs/architecture.md says the layers). */
export function checkLayers(root = repoRoot) {
  const files = sources(root);
  const known = new Set(files);
  const rank = layerOrder(root);
  const problems = [];
  const fileGraph = new Map();
  const folderGraph = new Map();
  for (const f of files) {
    const targets = importsOf(root, f, known);
    fileGraph.set(f, targets);
    const from = folderOf(f, rank);
    if (!from) {
      problems.push(`${f}: its folder is in no layer of docs/architecture.md`);
      continue;
    }
    for (const t of targets) {
      const to = folderOf(t, rank);
      if (!to || to === from) continue;
      if (!folderGraph.has(from)) folderGraph.set(from, new Set());
      folderGraph.get(from).add(to);
      if (rank.get(to) <= rank.get(from)) {
        const how = rank.get(to) === rank.get(from) ? 'a folder of its own layer' : 'a higher layer';
        problems.push(
          `${f} imports ${t}: ${from} (layer ${rank.get(from)}) may not import ${to}, ${how} (${rank.get(to)})`,
        );
      }
    }
  }
  for (const c of circles(fileGraph)) problems.push(`file circle: ${c.join(' ⇄ ')}`);
  const fg = new Map([...folderGraph].map(([k, v]) => [k, [...v]]));
  for (const c of circles(fg)) problems.push(`folder circle: ${c.join(' ⇄ ')}`);
  return { files: files.length, problems };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const { files, problems } = checkLayers();
  for (const p of problems) console.error(`check-layers: ${p}`);
  if (problems.length > 0) {
    console.error(
      `check-layers: ${problems.length} problems in ${files} files (docs/architecture.md, "Layers")`,
    );
    process.exit(1);
  }
  console.log(`check-layers: ${files} files, no circle, every import goes down the layer order`);
}
