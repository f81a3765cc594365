import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../../relay/core/stub-bundle.js';

/**
 * The flood's floor variants: a bare node process between the PTY and its reader, the least any
 * design with a Node daemon on the PTY can cost. It runs `cat` in a PTY through node-pty and
 * writes each chunk to its stdout as it comes: no frames, no history, no screen model, no flow
 * control. The bench reads it locally (a pipe, against node-pty read directly) and over SSH (a
 * pipe to sshd, then OpenSSH's client or ssh2 in the bench process, against `ssh -tt`), in the
 * same rounds as the rest.
 */
const SOURCE = `'use strict';
const pty = require(process.argv[2]);
const p = pty.spawn('cat', [process.argv[3]], {
  name: 'xterm-256color', cols: 80, rows: 24, cwd: '/', env: process.env, encoding: null,
});
p.onData((d) => process.stdout.write(d));
// node-pty may still deliver after the exit event: end stdout a moment later, once flushed.
p.onExit(() => setTimeout(() => process.stdout.end(() => process.exit(0)), 200));
`;

/** Writes the forwarder into `dir` (readable by the SSH login user); returns its command line. */
export function writeBareForwarder(dir: string, floodPath: string): string[] {
  const script = join(dir, 'bare-forwarder.cjs');
  writeFileSync(script, SOURCE, { mode: 0o644 });
  return [process.execPath, script, join(packageRoot(), 'node_modules', 'node-pty'), floodPath];
}
