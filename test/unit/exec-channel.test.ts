import type { Client, ClientChannel } from 'ssh2';
import { describe, expect, it } from 'vitest';
import { openExec } from '../../relay/deploy/exec-channel.js';

/** An ssh2 Client whose server refuses the first `refusals` exec requests (a fault no real server gives on demand). */
function refusingClient(refusals: number, other?: Error) {
  const asked: string[] = [];
  const conn = {
    exec(command: string, cb: (err: Error | undefined, stream: ClientChannel) => void) {
      asked.push(command);
      if (other) cb(other, undefined as never);
      else if (asked.length <= refusals) cb(new Error('Unable to exec'), undefined as never);
      else cb(undefined, { command } as unknown as ClientChannel);
    },
  } as unknown as Client;
  return { conn, asked };
}

describe('openExec', () => {
  it('asks again when the server refused the exec request (nothing ran), and says so', async () => {
    const { conn, asked } = refusingClient(2);
    const retries: number[] = [];
    const seen: unknown[] = [];
    const ch = await openExec(
      conn,
      'true',
      (s) => seen.push(s),
      (n) => retries.push(n),
    );
    // The caller's setup ran on the stream itself, once (inside the callback).
    expect(seen).toEqual([ch]);
    expect((ch as unknown as { command: string }).command).toBe('true');
    expect(asked).toEqual(['true', 'true', 'true']);
    expect(retries).toEqual([1, 2]);
  });

  it('gives up after the third refusal with the server’s error', async () => {
    const { conn, asked } = refusingClient(5);
    await expect(openExec(conn, 'true', () => {})).rejects.toThrow('Unable to exec');
    expect(asked).toHaveLength(3);
  });

  it('never retries another error (the connection is gone, a channel limit…)', async () => {
    const { conn, asked } = refusingClient(0, new Error('No response from server'));
    await expect(openExec(conn, 'true', () => {})).rejects.toThrow('No response from server');
    expect(asked).toHaveLength(1);
  });
});

describe('remoteExec over openExec', () => {
  it('keeps output and exit status that arrive in the same batch as the channel confirmation', async () => {
    const { EventEmitter } = await import('node:events');
    const { remoteExec } = await import('../../relay/deploy/remote-exec.js');
    const conn = {
      exec(_command: string, cb: (err: Error | undefined, stream: ClientChannel) => void) {
        const stream = Object.assign(new EventEmitter(), {
          stderr: new EventEmitter(),
          end() {},
          close() {},
        });
        cb(undefined, stream as unknown as ClientChannel);
        // ssh2 handles the rest of the packets it read in the same tick, before any microtask.
        stream.emit('data', Buffer.from('yes\n'));
        stream.emit('exit', 0);
        stream.emit('close');
      },
    } as unknown as Client;
    const r = await remoteExec(conn, 'test -f x && echo yes', { timeoutMs: 2000 });
    expect(r).toMatchObject({ stdout: 'yes\n', code: 0 });
  });
});
