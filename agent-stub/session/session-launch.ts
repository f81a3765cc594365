/** What a session is started with: the program, its place and size, and the shell-integration nonce. */
export interface SessionLaunch {
  file: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  cols: number;
  rows: number;
  name?: string;
  nonce: string;
  supportsCommandDetection: boolean;
}
