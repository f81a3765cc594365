import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, expect } from 'vitest';

/**
 * Every test file gets its own stub state dir (the terminal id counter lives there): local daemons a
 * test starts inherit PTYRELAY_STATE_DIR, so nothing lands in the developer's ~/.local/state and
 * nothing is left behind. Tests that pass `--state-dir` themselves are unaffected.
 *
 * The dir is named here and made by the first daemon that needs it (as ~/.local/state/ptyrelay
 * is): a file whose tests are all skipped (a container suite without a Docker engine) runs no
 * afterAll, and an empty dir made for it would be left behind. The name carries the test file's,
 * so the leak check says which file left something.
 */
const file = basename(expect.getState().testPath ?? 'unknown').replace(/\.test\.ts$/, '');
const dir = join(tmpdir(), `ptr-state-${file}-${randomBytes(4).toString('hex')}`);
process.env.PTYRELAY_STATE_DIR = dir;
afterAll(() => rmSync(dir, { recursive: true, force: true }));
