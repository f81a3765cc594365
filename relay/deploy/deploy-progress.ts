/** One progress report of `StubDeployer.deploy` (stub-deployer.ts). */
export interface DeployProgress {
  step: 'probe' | 'check' | 'lock' | 'upload' | 'verify' | 'install' | 'gc' | 'done';
  message: string;
  /** Upload: bytes sent so far, all files together. */
  bytes?: number;
  totalBytes?: number;
  /** Upload: the file the last chunk belonged to, and its own progress. */
  file?: string;
  fileBytes?: number;
  fileTotalBytes?: number;
}
