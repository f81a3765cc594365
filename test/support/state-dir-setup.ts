import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

/**
 * Every test file gets its own stub state dir (the terminal id counter lives there): local daemons a
 * test starts inherit PTYRELAY_STATE_DIR, so nothing lands in the developer's ~/.local/state and
 * nothing is left behind. Tests that pass `--state-dir` themselves are unaffected.
 */
const dir = mkdtempSync(join(tmpdir(), 'ptr-state-'));
process.env.PTYRELAY_STATE_DIR = dir;
afterAll(() => rmSync(dir, { recursive: true, force: true }));
