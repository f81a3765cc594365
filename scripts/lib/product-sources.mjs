// The product's TypeScript sources, for the lint scripts (check-layers, check-function-length).
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

/** Every .ts file (not .d.ts) under `trees` of `root`, relative to it, sorted; generated output skipped. */
export function productSources(root, trees) {
  const out = [];
  const walk = (dir) => {
    for (const name of readdirSync(dir)) {
      if (name === 'node_modules' || name === 'out') continue;
      const p = join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (p.endsWith('.ts') && !p.endsWith('.d.ts')) out.push(relative(root, p));
    }
  };
  for (const t of trees) if (existsSync(join(root, t))) walk(join(root, t));
  return out.sort();
}
