import type { Client, SFTPWrapper, Stats } from 'ssh2';
import type { RemoteFs, RemoteStat, UploadFile, UploadStep } from './remote-fs.js';

/** SFTP status code for a missing path (SSH_FX_NO_SUCH_FILE). */
const SFTP_NO_SUCH_FILE = 2;

type Cb<T> = (err: Error | null | undefined, value?: T) => void;

function call<T = void>(fn: (cb: Cb<T>) => void): Promise<T> {
  return new Promise((resolve, reject) => fn((err, value) => (err ? reject(err) : resolve(value as T))));
}

/** Whether an SFTP error means "no such file". */
export function isNoSuchFile(err: unknown): boolean {
  return (err as { code?: unknown })?.code === SFTP_NO_SUCH_FILE;
}

/** Opening the subsystem is one round trip; a server that never answers is as good as none. */
const OPEN_TIMEOUT_MS = 15_000;

/** Promise wrappers over the few SFTP requests the deployer makes. */
export class Sftp implements RemoteFs {
  readonly method = 'sftp';
  private constructor(readonly raw: SFTPWrapper) {}

  /**
   * Opens the SFTP subsystem on a connected client. Rejects when the server has none (`Unable to
   * start subsystem: sftp`), when an rc file's output corrupts the stream, or after a timeout.
   */
  static open(conn: Client): Promise<Sftp> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no SFTP answer within ${OPEN_TIMEOUT_MS} ms`)),
        OPEN_TIMEOUT_MS,
      );
      conn.sftp((err, raw) => {
        clearTimeout(timer);
        if (err) return reject(err);
        // Errors after the handshake (a corrupted stream) surface on the requests that hit them.
        raw.on('error', () => {});
        resolve(new Sftp(raw));
      });
    });
  }

  mkdir(path: string, mode: number): Promise<void> {
    return call((cb) => this.raw.mkdir(path, { mode }, cb));
  }

  async mkdirs(paths: string[], mode: number): Promise<void> {
    for (const p of paths) await this.mkdir(p, mode);
  }

  /** Stats `path`, or undefined when it does not exist. */
  async stat(path: string): Promise<RemoteStat | undefined> {
    try {
      const st = await call<Stats>((cb) => this.raw.lstat(path, cb));
      return { mtimeMs: st.mtime * 1000 };
    } catch (err) {
      if (isNoSuchFile(err)) return undefined;
      throw err;
    }
  }

  rename(from: string, to: string): Promise<void> {
    return call((cb) => this.raw.rename(from, to, cb));
  }

  writeFile(path: string, data: string, mode: number): Promise<void> {
    return call((cb) => this.raw.writeFile(path, data, { mode }, cb));
  }

  /** Reads a small text file, or undefined when it does not exist. */
  async readText(path: string): Promise<string | undefined> {
    try {
      return (await call<Buffer>((cb) => this.raw.readFile(path, cb))).toString('utf8');
    } catch (err) {
      if (isNoSuchFile(err)) return undefined;
      throw err;
    }
  }

  unlink(path: string): Promise<void> {
    return call((cb) => this.raw.unlink(path, cb));
  }

  rmdir(path: string): Promise<void> {
    return call((cb) => this.raw.rmdir(path, cb));
  }

  /** Sets both times, in seconds since the epoch. */
  utimes(path: string, seconds: number): Promise<void> {
    return call((cb) => this.raw.utimes(path, seconds, seconds, cb));
  }

  /** Pipelined writes, all files at once: on a slow link per-file round trips dominate, not bandwidth. */
  async upload(files: UploadFile[], step: UploadStep): Promise<void> {
    await Promise.all(
      files.map((f) =>
        call((cb) =>
          this.raw.fastPut(
            f.source,
            f.remote,
            { mode: f.mode, step: (fileBytes, chunk) => step(f, fileBytes, chunk) },
            cb,
          ),
        ),
      ),
    );
  }

  end(): void {
    this.raw.end();
  }
}
