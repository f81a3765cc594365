import type { Client, SFTPWrapper, Stats, TransferOptions } from 'ssh2';

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

/** Promise wrappers over the few SFTP requests the deployer makes. */
export class Sftp {
  private constructor(readonly raw: SFTPWrapper) {}

  /** Opens the SFTP subsystem on a connected client. */
  static open(conn: Client): Promise<Sftp> {
    return call<SFTPWrapper>((cb) => conn.sftp(cb)).then((raw) => new Sftp(raw));
  }

  mkdir(path: string, mode: number): Promise<void> {
    return call((cb) => this.raw.mkdir(path, { mode }, cb));
  }

  /** Stats `path`, or undefined when it does not exist. */
  async stat(path: string): Promise<Stats | undefined> {
    try {
      return await call<Stats>((cb) => this.raw.lstat(path, cb));
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

  /** Uploads a local file with pipelined writes; `step` gets (transferred, chunk, total). */
  fastPut(local: string, remote: string, opts: TransferOptions): Promise<void> {
    return call((cb) => this.raw.fastPut(local, remote, opts, cb));
  }

  end(): void {
    this.raw.end();
  }
}
