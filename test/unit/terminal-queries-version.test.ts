import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { PTYRELAY_VERSION } from '../../provider/terminal-queries.js';

it("XTVERSION's version is package.json's", () => {
  const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'package.json'), 'utf8'));
  expect(PTYRELAY_VERSION).toBe(pkg.version);
});
