import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../provider/errors.js';

const DOC = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'errors.md'), 'utf8');

describe('docs/errors.md', () => {
  it('lists every code with its phase and retryable flag, and no code that does not exist', () => {
    const rows = new Map<string, { phase: string; retryable: boolean }>();
    for (const m of DOC.matchAll(/^\|\s*`([A-Z_]+)`\s*\|\s*([a-z]+)\s*\|\s*(yes|no)\s*\|/gm)) {
      rows.set(m[1]!, { phase: m[2]!, retryable: m[3] === 'yes' });
    }
    expect(Object.fromEntries(rows)).toEqual(
      Object.fromEntries(
        Object.entries(ErrorCodes).map(([code, v]) => [code, { phase: v.phase, retryable: v.retryable }]),
      ),
    );
  });
});
