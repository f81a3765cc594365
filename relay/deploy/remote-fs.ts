/** How the deployer writes files on a host: SFTP requests, or node helpers over exec channels. */
export type UploadMethod = 'sftp' | 'exec';

/** What the deployer needs to know about a remote path. */
export interface RemoteStat {
  mtimeMs: number;
}

/** One local file to put on the host. */
export interface UploadFile {
  /** Relative path inside the install dir (progress reports). */
  path: string;
  /** Absolute local path. */
  source: string;
  /** Absolute remote path; its parent dir exists. */
  remote: string;
  size: number;
  mode: number;
}

/** Upload progress: the file, its bytes so far, and the size of the last chunk. */
export type UploadStep = (file: UploadFile, fileBytes: number, chunk: number) => void;

/**
 * The file operations of a deploy (install lock, upload, `.complete`, rename), over either
 * {@link UploadMethod}. Errors carry `code` (an errno name over exec, an SFTP status over SFTP);
 * `stat` and `readText` answer undefined for a missing path instead of throwing.
 */
export interface RemoteFs {
  readonly method: UploadMethod;
  /** Fails (EEXIST, or SFTP's generic failure) when `path` exists: the install lock relies on it. */
  mkdir(path: string, mode: number): Promise<void>;
  /** Creates each dir in order (parents first). */
  mkdirs(paths: string[], mode: number): Promise<void>;
  stat(path: string): Promise<RemoteStat | undefined>;
  rename(from: string, to: string): Promise<void>;
  writeFile(path: string, data: string, mode: number): Promise<void>;
  readText(path: string): Promise<string | undefined>;
  unlink(path: string): Promise<void>;
  rmdir(path: string): Promise<void>;
  /** Sets both times, in seconds since the epoch. */
  utimes(path: string, seconds: number): Promise<void>;
  /** Puts every file (all at once where the method pipelines) and reports progress. */
  upload(files: UploadFile[], step: UploadStep): Promise<void>;
  end(): void;
}
