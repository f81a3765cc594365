import { once } from 'node:events';
import { createReadStream } from 'node:fs';
import type { Client } from 'ssh2';
import * as z from 'zod/mini';
import { PtyRelayError } from '../../provider/errors.js';
import type { RemoteFs, RemoteStat, UploadFile, UploadStep } from './remote-fs.js';
import {
  FS_CALL_JS,
  type FsCall,
  type FsResult,
  type HelperOp,
  helperScript,
  newMarker,
  parseHelperOutput,
  parseMarkedLines,
} from './remote-scripts.js';
import { type MarkedChannel, nodeEvalScript, nodeProgram, openMarkedChannel, runSh } from './sh-exec.js';

/** Hashing ~1 MB or scanning /proc is quick; this only catches a wedged host. */
export const HELPER_TIMEOUT_MS = 60_000;
/** A 0.5 MB stub over a link slower than ~2 KB/s is not worth waiting for. */
const UPLOAD_TIMEOUT_MS = 5 * 60_000;
/** Error messages carry the end of stderr, where the reason usually is. */
const STDERR_TAIL_BYTES = 2048;

const tail = (s: string): string => s.slice(-STDERR_TAIL_BYTES);

/**
 * Runs the node helper with `ops` on the host's node (an sh script feeding it from a
 * here-document, so no login shell parses it) and returns one result per op.
 * @throws PtyRelayError DEPLOY_FAILED with the stderr tail when the helper does not report.
 */
export async function runHelper(conn: Client, nodePath: string, ops: HelperOp[]): Promise<unknown[]> {
  const marker = newMarker();
  const r = await runSh(conn, nodeProgram(nodePath, helperScript(marker, ops)), {
    timeoutMs: HELPER_TIMEOUT_MS,
  });
  const out = r.code === 0 ? parseHelperOutput(r.stdout, marker) : undefined;
  if (!out || out.length !== ops.length) {
    throw new PtyRelayError(
      'DEPLOY_FAILED',
      `remote step ${ops.map((o) => o.op).join('+')} failed (exit ${r.code ?? r.signal})`,
      { stderr: tail(r.stderr) },
    );
  }
  return out;
}

const FsResultSchema = z.union([
  z.object({ ok: z.unknown() }),
  z.object({ err: z.string(), message: z.string() }),
]);
const StatSchema = z.object({ mtimeMs: z.number() });
const UploadReportSchema = z.union([
  z.object({ sha256: z.array(z.string()) }),
  z.object({ err: z.string(), message: z.string() }),
]);

function parseJson(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return undefined; // the schema check that follows reports it
  }
}

/** An error of a remote fs call, with its errno name as `code` (like node's own). */
function fsError(r: { err: string; message: string }): Error {
  return Object.assign(new Error(r.message), { code: r.err });
}

/**
 * The receiver of an exec upload (node >= 18, run with `-e`): creates each file exclusively with
 * its mode, copies exactly its size from stdin, and reports the sha256 of what it wrote.
 * `P = { marker, files: [{ remote, size, mode }] }` is prepended.
 */
const RECEIVER_BODY = `
const fs = require('fs');
const crypto = require('crypto');
const report = (o) => { fs.writeSync(1, '\\n' + P.marker + 'report=' + JSON.stringify(o) + '\\n'); };
const sums = [];
let i = -1, fd, left = 0, hash;
function next() {
  for (;;) {
    if (fd !== undefined) { fs.closeSync(fd); fd = undefined; sums.push(hash.digest('hex')); }
    if (++i >= P.files.length) return false;
    const f = P.files[i];
    fd = fs.openSync(f.remote, 'wx', f.mode);
    fs.fchmodSync(fd, f.mode);
    hash = crypto.createHash('sha256');
    left = f.size;
    if (left > 0) return true;
  }
}
function fail(e) { report({ err: String(e.code || 'EIO'), message: String(e.message) }); process.exit(1); }
let more;
try { more = next(); } catch (e) { fail(e); }
fs.writeSync(1, P.marker + '\\n');
process.stdin.on('data', (c) => {
  try {
    let off = 0;
    while (off < c.length) {
      if (!more) throw Object.assign(new Error('more bytes than the files hold'), { code: 'EPROTO' });
      const n = Math.min(left, c.length - off);
      const part = c.subarray(off, off + n);
      for (let w = 0; w < part.length; ) w += fs.writeSync(fd, part, w);
      hash.update(part);
      left -= n;
      off += n;
      if (left === 0) more = next();
    }
  } catch (e) { fail(e); }
});
process.stdin.on('end', () => {
  if (more) fail(Object.assign(new Error('stdin ended inside file ' + i), { code: 'EPROTO' }));
  report({ sha256: sums });
  process.exit(0);
});
`;

/**
 * The fs session program (node >= 18, run with `-e`): one JSON request per stdin line, one JSON
 * answer per stdout line, in order. `P = { marker }` is prepended.
 */
const SESSION_BODY = `
const fs = require('fs');
${FS_CALL_JS}
function out(s) {
  const b = Buffer.from(s);
  for (let w = 0; w < b.length; ) {
    try { w += fs.writeSync(1, b, w); } catch (e) { if (e.code !== 'EAGAIN') throw e; }
  }
}
out(P.marker + '\\n');
let buf = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (c) => {
  buf += c;
  for (let i = buf.indexOf('\\n'); i >= 0; i = buf.indexOf('\\n')) {
    const line = buf.slice(0, i);
    buf = buf.slice(i + 1);
    let req;
    try { req = JSON.parse(line); } catch (e) { req = undefined; }
    out(JSON.stringify(req ? fsCall(req) : { err: 'EPROTO', message: 'bad request' }) + '\\n');
  }
});
process.stdin.on('end', () => process.exit(0));
`;

/**
 * One node process on the host answering fs calls over one exec channel: a lock poll or a rename
 * costs a round trip, not a login shell and a node start each.
 */
class FsSession {
  private readonly pending: { resolve: (r: FsResult) => void; reject: (e: Error) => void }[] = [];
  private buf = '';
  private closed: Error | undefined;

  private constructor(private readonly ch: MarkedChannel) {
    ch.stream.setEncoding('utf8');
    ch.stream.on('data', (c: string) => this.onData(c));
    ch.stream.on('close', () => this.fail(new Error(`exec fs session closed: ${ch.stderr().trim()}`)));
    ch.stream.resume();
  }

  static async open(conn: Client, nodePath: string): Promise<FsSession> {
    const marker = newMarker();
    const js = `'use strict';\nconst P = ${JSON.stringify({ marker })};\n${SESSION_BODY}`;
    const ch = await openMarkedChannel(conn, nodeEvalScript(nodePath, js), marker, {
      timeoutMs: HELPER_TIMEOUT_MS,
      what: 'exec fs session',
    });
    return new FsSession(ch);
  }

  call(req: { call: FsCall; args: (string | number)[] }): Promise<FsResult> {
    if (this.closed) return Promise.reject(this.closed);
    return new Promise((resolve, reject) => {
      this.pending.push({ resolve, reject });
      this.ch.stream.write(`${JSON.stringify(req)}\n`);
    });
  }

  private onData(c: string): void {
    this.buf += c;
    for (let i = this.buf.indexOf('\n'); i >= 0; i = this.buf.indexOf('\n')) {
      const line = this.buf.slice(0, i);
      this.buf = this.buf.slice(i + 1);
      const p = this.pending.shift();
      const r = FsResultSchema.safeParse(parseJson(line));
      if (!p) continue;
      if (r.success) p.resolve(r.data);
      else p.reject(new Error(`exec fs session sent ${line.slice(0, 200)}`));
    }
  }

  private fail(e: Error): void {
    this.closed ??= e;
    for (const p of this.pending.splice(0)) p.reject(e);
  }

  end(): void {
    this.ch.stream.end();
  }
}

/**
 * {@link RemoteFs} over exec channels, for hosts without a working SFTP subsystem: calls go to one
 * node session started by `/bin/sh` ({@link FsSession}); an upload is one more channel whose stdin
 * carries the files back to back after the receiver printed its start marker.
 */
export class ExecFs implements RemoteFs {
  readonly method = 'exec';
  private session: Promise<FsSession> | undefined;
  private ended = false;

  constructor(
    private readonly conn: Client,
    private readonly nodePath: string,
  ) {}

  private async calls(list: { call: FsCall; args: (string | number)[] }[]): Promise<FsResult[]> {
    // A late call (a lock heartbeat racing the release) must not open a session nobody ends.
    if (this.ended) throw new Error('exec fs used after end()');
    this.session ??= FsSession.open(this.conn, this.nodePath);
    const s = await this.session;
    return Promise.all(list.map((c) => s.call(c)));
  }

  private async call(call: FsCall, ...args: (string | number)[]): Promise<unknown> {
    const [r] = await this.calls([{ call, args }]);
    if ('err' in r!) throw fsError(r);
    return r!.ok;
  }

  async mkdir(path: string, mode: number): Promise<void> {
    await this.call('mkdir', path, mode);
  }

  async mkdirs(paths: string[], mode: number): Promise<void> {
    if (paths.length === 0) return;
    const rs = await this.calls(paths.map((p) => ({ call: 'mkdir', args: [p, mode] })));
    for (const r of rs) if ('err' in r) throw fsError(r);
  }

  async stat(path: string): Promise<RemoteStat | undefined> {
    const [r] = await this.calls([{ call: 'stat', args: [path] }]);
    if ('err' in r!) {
      if (r.err === 'ENOENT') return undefined;
      throw fsError(r);
    }
    return StatSchema.parse(r!.ok);
  }

  async rename(from: string, to: string): Promise<void> {
    await this.call('rename', from, to);
  }

  async writeFile(path: string, data: string, mode: number): Promise<void> {
    await this.call('writeFile', path, data, mode);
  }

  async readText(path: string): Promise<string | undefined> {
    const [r] = await this.calls([{ call: 'readText', args: [path] }]);
    if ('err' in r!) {
      if (r.err === 'ENOENT') return undefined;
      throw fsError(r);
    }
    return z.string().parse(r!.ok);
  }

  async unlink(path: string): Promise<void> {
    await this.call('unlink', path);
  }

  async rmdir(path: string): Promise<void> {
    await this.call('rmdir', path);
  }

  async utimes(path: string, seconds: number): Promise<void> {
    await this.call('utimes', path, seconds);
  }

  async upload(files: UploadFile[], step: UploadStep): Promise<void> {
    const marker = newMarker();
    const p = { marker, files: files.map(({ remote, size, mode }) => ({ remote, size, mode })) };
    const js = `'use strict';\nconst P = ${JSON.stringify(p)};\n${RECEIVER_BODY}`;
    const ch = await openMarkedChannel(this.conn, nodeEvalScript(this.nodePath, js), marker, {
      timeoutMs: HELPER_TIMEOUT_MS,
      what: 'exec upload',
    });
    const { stream } = ch;
    const out: Buffer[] = [];
    stream.on('data', (c: Buffer) => out.push(c));
    const closed = once(stream, 'close');
    const timer = setTimeout(() => stream.close(), UPLOAD_TIMEOUT_MS);
    try {
      stream.resume();
      for (const f of files) {
        let fileBytes = 0;
        for await (const chunk of createReadStream(f.source)) {
          const b = chunk as Buffer;
          fileBytes += b.length;
          if (!stream.write(b)) await Promise.race([once(stream, 'drain'), closed]);
          step(f, fileBytes, b.length);
        }
      }
      stream.end();
      await closed;
    } finally {
      clearTimeout(timer);
    }
    const report = parseMarkedLines(Buffer.concat(out).toString('utf8'), marker).get('report')?.at(-1);
    const parsed = report ? UploadReportSchema.safeParse(parseJson(report)) : undefined;
    if (!parsed?.success) {
      throw new PtyRelayError('DEPLOY_FAILED', 'exec upload ended without a report', {
        stderr: tail(ch.stderr()),
      });
    }
    if ('err' in parsed.data) throw fsError(parsed.data);
    const sums = parsed.data.sha256;
    if (sums.length !== files.length)
      throw new PtyRelayError('DEPLOY_FAILED', 'exec upload wrote too few files');
  }

  end(): void {
    this.ended = true;
    this.session?.then((s) => s.end()).catch(() => {}); // a session that never opened has nothing to end
    this.session = undefined;
  }
}
