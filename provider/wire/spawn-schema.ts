import * as z from 'zod/mini';

/**
 * The fields of a spawn as every boundary checks them: the stub's `spawn` request, the relay's
 * `ptyrelay/spawn`, AHP `createTerminal` and MCP `terminal_open`. Nothing here reaches a shell
 * (the program is an argv, never a string), but a NUL would be cut by execve and an `=` in an
 * env name would set a different variable than the one asked for, so both are refused.
 * `zod/mini`: the stub bundles it (agent-messages.ts).
 */

/** Longest env name (a name is an identifier; 1 KiB is far past any real one). */
export const MAX_ENV_NAME_LENGTH = 1024;
/** Longest env value or argument: Linux's MAX_ARG_STRLEN (execve refuses longer strings). */
export const MAX_ARG_LENGTH = 128 * 1024;
/** Most env entries, args or names to delete in one spawn. */
export const MAX_SPAWN_LIST = 4096;
/** Longest cwd (PATH_MAX). */
export const MAX_PATH_LENGTH = 4096;
/** Longest terminal name, paneKey or requestId. */
export const MAX_NAME_LENGTH = 1024;
/** Longest host name (a DNS name is at most 253 characters). */
export const MAX_HOST_NAME_LENGTH = 253;
/** Largest terminal side in cells. */
export const MAX_TERMINAL_CELLS = 4096;

const noNul = (s: string) => !s.includes('\0');
const text = (max: number) =>
  z
    .string({ error: 'must be a string' })
    .check(z.maxLength(max, `must be at most ${max} characters`), z.refine(noNul, 'must not contain NUL'));
const nonEmpty = (max: number) => text(max).check(z.minLength(1, 'must not be empty'));

/** A host name as the relay config allows it (docs/config.md, `hosts`): it is part of terminal ids. */
export const hostNameSchema = z.lazy(() =>
  nonEmpty(MAX_HOST_NAME_LENGTH).check(
    z.regex(/^[A-Za-z0-9._-]+$/, 'may only use letters, digits, ".", "_" and "-"'),
  ),
);

export const envNameSchema = z.lazy(() =>
  nonEmpty(MAX_ENV_NAME_LENGTH).check(z.refine((s: string) => !s.includes('='), 'must not contain "="')),
);

/** Absolute, or relative to the user's home (`~`, `~/dir`), as the stub resolves it. */
export const cwdSchema = z.lazy(() =>
  nonEmpty(MAX_PATH_LENGTH).check(
    z.refine(
      (s: string) => s.startsWith('/') || s === '~' || s.startsWith('~/'),
      'must be an absolute path or start with ~/',
    ),
  ),
);

const cells = () =>
  z
    .int({ error: `must be an integer 1-${MAX_TERMINAL_CELLS}` })
    .check(
      z.minimum(1, `must be an integer 1-${MAX_TERMINAL_CELLS}`),
      z.maximum(MAX_TERMINAL_CELLS, `must be an integer 1-${MAX_TERMINAL_CELLS}`),
    );
const list = <T extends z.ZodMiniType>(item: T) =>
  z
    .array(item, { error: 'must be an array' })
    .check(z.maxLength(MAX_SPAWN_LIST, `must have at most ${MAX_SPAWN_LIST} entries`));

/**
 * The spawn fields every boundary shares (host, flow mode and aliases are added by each), made for
 * each schema that spreads them (those are built on first use; see stub-schemas.ts).
 */
export const spawnFields = () => ({
  cols: z.optional(cells()),
  rows: z.optional(cells()),
  cwd: z.optional(cwdSchema),
  env: z.optional(
    z
      .record(envNameSchema, text(MAX_ARG_LENGTH), { error: 'must be an object of strings' })
      .check(
        z.refine(
          (e: Record<string, string>) => Object.keys(e).length <= MAX_SPAWN_LIST,
          `must have at most ${MAX_SPAWN_LIST} entries`,
        ),
      ),
  ),
  envToDelete: z.optional(list(envNameSchema)),
  command: z.optional(nonEmpty(MAX_PATH_LENGTH)),
  args: z.optional(list(text(MAX_ARG_LENGTH))),
  name: z.optional(text(MAX_NAME_LENGTH)),
  paneKey: z.optional(nonEmpty(MAX_NAME_LENGTH)),
  requestId: z.optional(nonEmpty(MAX_NAME_LENGTH)),
  alias: z.optional(nonEmpty(MAX_NAME_LENGTH)),
});

/** The owner of an agent terminal: only the relay's agent service sets it (not the relay API's spawn). */
const agentTagSchema = z.lazy(() =>
  z.object({
    owner: nonEmpty(MAX_NAME_LENGTH),
    id: nonEmpty(MAX_NAME_LENGTH),
    seenAt: z.int({ error: 'must be an integer' }).check(z.minimum(0, 'must be at least 0')),
  }),
);

/** A terminal's owner as its daemon keeps it (`client:ID`): only a relay sets it (PtySpawnOptions.owner). */
export const terminalOwnerSchema = z.lazy(() => nonEmpty(MAX_NAME_LENGTH));

/** A spawn on the stub link (ids are the daemon's; no host). */
export const stubSpawnParamsSchema = z.lazy(() =>
  z.object({
    ...spawnFields(),
    agent: z.optional(agentTagSchema),
    owner: z.optional(terminalOwnerSchema),
  }),
);
