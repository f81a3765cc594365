import { createHash } from 'node:crypto';
import {
  chmodSync,
  close,
  fdatasync,
  mkdirSync,
  open,
  readdirSync,
  readFileSync,
  rename,
  statSync,
  unlink,
  unlinkSync,
  writeFile,
} from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseRestoreRecord, type RestoreRecord } from './restore-record.js';

/*
 * node:fs's callback functions, promisified: `node:fs/promises` would load node's modules for file
 * handles, streams, watchers and readline into every daemon (about 0.9 MB of RSS) for one small
 * write every few seconds.
 */
const openFile = promisify(open);
const writeFd = promisify(writeFile);
const syncFd = promisify(fdatasync);
const closeFd = promisify(close);
const renameFile = promisify(rename);
const unlinkFile = promisify(unlink);

/** Record files and their directory are the user's alone. */
const FILE_MODE = 0o600;
const DIR_MODE = 0o700;
const RECORD_SUFFIX = '.json';
/** Characters allowed in a record's file name; anything else in a session id becomes `_`. */
const UNSAFE_NAME_CHARS = /[^A-Za-z0-9._-]/g;

/** The scope of a daemon: a short hash of its runtime dir, so daemons of other setups never mix. */
export function restoreScope(runtimeDir: string): string {
  return createHash('sha256').update(runtimeDir).digest('hex').slice(0, 12);
}

/** A record file found on disk: its record, or why it could not be read. */
export interface StoredRecord {
  file: string;
  mtimeMs: number;
  record?: RestoreRecord;
  error?: string;
}

/**
 * The directory of cold-restore records (`<stateDir>/restore/`): atomic writes (temp file, then
 * rename, so a reader or a reboot sees the old record or the new one, never half of one), reads
 * validated by schema, removal. File names are `<scope>-<session id>.json`.
 */
export class RestoreStore {
  readonly dir: string;

  constructor(stateDir: string) {
    this.dir = join(stateDir, 'restore');
  }

  /** Creates the state dir and the restore dir (0700). */
  ensureDir(): void {
    mkdirSync(this.dir, { recursive: true, mode: DIR_MODE });
    for (const d of [join(this.dir, '..'), this.dir]) {
      if ((statSync(d).mode & 0o077) !== 0) chmodSync(d, DIR_MODE);
    }
  }

  fileOf(scope: string, id: string): string {
    return join(this.dir, `${scope}-${id.replace(UNSAFE_NAME_CHARS, '_')}${RECORD_SUFFIX}`);
  }

  /** Writes `text` as the record file of (scope, id): temp file 0600, fsync, rename. */
  async write(scope: string, id: string, text: string): Promise<void> {
    const file = this.fileOf(scope, id);
    const tmp = `${file}.${process.pid}.tmp`;
    const fd = await openFile(tmp, 'w', FILE_MODE);
    try {
      await writeFd(fd, text);
      await syncFd(fd);
    } finally {
      await closeFd(fd);
    }
    try {
      await renameFile(tmp, file);
    } catch (err) {
      await unlinkFile(tmp).catch(() => undefined);
      throw err;
    }
  }

  /** Removes the record of (scope, id); a missing file is fine. */
  async remove(scope: string, id: string): Promise<void> {
    await removeFile(this.fileOf(scope, id));
  }

  /** Every record file (and leftover temp file, as an error) in the directory. */
  readAll(): StoredRecord[] {
    const out: StoredRecord[] = [];
    for (const { file, mtimeMs } of this.files()) {
      if (!file.endsWith(RECORD_SUFFIX)) {
        out.push({ file, mtimeMs, error: 'not a record file (an interrupted write)' });
        continue;
      }
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch (err) {
        // Removed between readdir and read (another daemon's cleanup): nothing to report.
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw err;
      }
      out.push({ file, mtimeMs, ...parseRestoreRecord(text) });
    }
    return out;
  }

  /**
   * Every file in the directory with its modification time, none of them read: records are up to
   * 1 MiB each (a screen and its scrollback), so judging age by content cost a daemon with fifty
   * sessions 10 MB of reading and parsing per sweep.
   */
  files(): { file: string; mtimeMs: number }[] {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    const out: { file: string; mtimeMs: number }[] = [];
    for (const name of names) {
      const file = join(this.dir, name);
      try {
        out.push({ file, mtimeMs: statSync(file).mtimeMs });
      } catch (err) {
        // Removed between readdir and stat (another daemon's cleanup): nothing to report.
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
    }
    return out;
  }

  removeFileSync(file: string): void {
    try {
      unlinkSync(file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
}

async function removeFile(file: string): Promise<void> {
  try {
    await unlinkFile(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}
