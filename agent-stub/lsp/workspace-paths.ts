import { existsSync, realpath, stat, statSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { PtyRelayError } from '../../provider/errors.js';

/* Callback functions, promisified: a daemon that never serves code navigation loads no `node:fs/promises`. */
const statPath = promisify(stat);
const realPath = promisify(realpath);

/** What marks a workspace for consumers that pick the nearest one (`ptyrelay nav` without `--root`). */
export const WORKSPACE_MARKER = '.git';

/**
 * The workspace root and the document of a query as the file system has them (symlinks
 * resolved): the root must be a directory, the file (absolute, or relative to the root) must
 * exist. NOT_FOUND naming the path otherwise.
 */
export async function resolveWorkspace(
  workspaceRoot: string,
  filePath: string,
): Promise<{ root: string; file: string }> {
  const root = await real(workspaceRoot, 'workspace root');
  if (!(await statPath(root)).isDirectory())
    throw new PtyRelayError('NOT_FOUND', `workspace root ${workspaceRoot} is not a directory`, {
      workspaceRoot,
    });
  const file = await real(isAbsolute(filePath) ? filePath : resolve(workspaceRoot, filePath), 'file');
  return { root, file };
}

async function real(path: string, what: string): Promise<string> {
  try {
    return await realPath(path);
  } catch (err) {
    throw new PtyRelayError(
      'NOT_FOUND',
      `${what} ${path} does not exist (${(err as NodeJS.ErrnoException).code})`,
      {
        path,
      },
    );
  }
}

/** The nearest directory at or above `filePath` that holds `.git` (a dir or a worktree's file), or null. */
export function nearestWorkspaceRoot(filePath: string): string | null {
  let dir = existsSync(filePath) && statSync(filePath).isDirectory() ? filePath : dirname(filePath);
  for (;;) {
    if (existsSync(join(dir, WORKSPACE_MARKER))) return dir;
    const up = dirname(dir);
    if (up === dir) return null;
    dir = up;
  }
}
