// zod/mini: the same schemas at a twentieth of full zod's size in the bundle every host downloads.
import * as z from 'zod/mini';

/**
 * The on-disk cold-restore record of one session: what a user needs to pick up after the host
 * rebooted (last screen with bounded scrollback, cwd, title, command, exit state). One JSON file
 * per session under `<stateDir>/restore/`, written atomically, 0600.
 */
export const RESTORE_RECORD_VERSION = 1;

const exitSchema = z.object({ exitCode: z.int(), signal: z.optional(z.string()) });

export const restoreRecordSchema = z.object({
  v: z.literal(RESTORE_RECORD_VERSION),
  /** Which daemon family wrote it: a hash of the runtime dir (one per user and setup). */
  scope: z.string().check(z.minLength(1)),
  /** `<pid>:<start time>` of the daemon that wrote it; it owns the record while it lives. */
  owner: z.string().check(z.minLength(1)),
  id: z.string().check(z.minLength(1)),
  incarnationId: z.string().check(z.minLength(1)),
  command: z.string(),
  args: z.array(z.string()),
  name: z.optional(z.string()),
  /** The client-chosen name (an AHP channel URI) the session was listed under. */
  alias: z.optional(z.string().check(z.minLength(1))),
  cwd: z.optional(z.string()),
  title: z.string(),
  cols: z.int().check(z.positive()),
  rows: z.int().check(z.positive()),
  /** VT data that repaints the last screen and the scrollback rows kept above it. */
  screen: z.string(),
  scrollbackRows: z.int().check(z.nonnegative()),
  /** Output bytes the screen reflects. */
  seq: z.int().check(z.nonnegative()),
  alternateScreen: z.boolean(),
  exited: z.optional(exitSchema),
  createdAt: z.number(),
  savedAt: z.number(),
});

export type RestoreRecord = z.infer<typeof restoreRecordSchema>;

/** Parses a record file's text; undefined (with the reason) when it is not a valid record. */
export function parseRestoreRecord(text: string): { record?: RestoreRecord; error?: string } {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    return { error: `not JSON: ${(err as Error).message}` };
  }
  const r = restoreRecordSchema.safeParse(raw);
  return r.success ? { record: r.data } : { error: r.error.issues[0]?.message ?? 'invalid record' };
}
