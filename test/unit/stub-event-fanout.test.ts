import { describe, expect, it } from 'vitest';
import { Emitter } from '../../provider/emitter.js';
import type { StubAttachResult } from '../../provider/wire/messages.js';
import type { StubClient } from '../../relay/stub-link/stub-client.js';
import { StubEventFanout } from '../../relay/stub-link/stub-event-fanout.js';

/**
 * A stand-in for one daemon link: only the events StubEventFanout subscribes to and the acks it
 * sends (the wire itself is covered by the integration suites).
 */
function fakeLink() {
  const acks: Array<[string, number]> = [];
  const client = {
    data: new Emitter<{ id: string; incarnationId: string; seq: number; data: Uint8Array }>(),
    fact: new Emitter(),
    exit: new Emitter(),
    background: new Emitter(),
    attached: new Emitter<{ result: StubAttachResult; blob?: Uint8Array }>(),
    beforeWrite: () => {},
    ack: (id: string, seq: number) => acks.push([id, seq]),
  };
  return { client, acks, asStub: client as unknown as StubClient };
}

const reply = (seq: number, over: Partial<StubAttachResult> = {}): StubAttachResult => ({
  id: 'pty-1',
  pid: 1,
  incarnationId: 'inc',
  cols: 80,
  rows: 24,
  seq,
  generation: 'continued',
  ...over,
});

describe('StubEventFanout: credit across re-attaches', () => {
  it('an attach that catches up from below what the consumers took keeps their position and resends it at once', () => {
    const link = fakeLink();
    const events = new StubEventFanout({
      globalId: (host, localId) => `${host}/${localId}`,
      connectedClient: () => link.asStub,
      manualAck: () => true,
    });
    events.wire('h', link.asStub);
    link.client.attached.emit({ result: reply(0) });
    link.client.data.emit({ id: 'pty-1', incarnationId: 'inc', seq: 0, data: new Uint8Array(1000) });
    events.consumedTo('h/pty-1', 'inc', 1000);
    // Pending credit rides with the next frame the relay sends on the link.
    link.client.beforeWrite();
    expect(link.acks.at(-1)).toEqual(['pty-1', 1000]);
    // A lagging view resumes from 200: the daemon restarts this link's stream and credit there.
    link.client.attached.emit({ result: reply(200, { replayFromSeq: 200 }) });
    link.client.beforeWrite();
    // The consumers had taken 1000: the daemon hears it again, not 200 (which it would hold the
    // program at, with no consumer left to acknowledge anything new).
    expect(link.acks.at(-1)).toEqual(['pty-1', 1000]);
    // The catch-up's bytes come again; credit never goes back.
    link.client.data.emit({ id: 'pty-1', incarnationId: 'inc', seq: 200, data: new Uint8Array(800) });
    events.consumedTo('h/pty-1', 'inc', 600);
    link.client.beforeWrite();
    expect(link.acks.at(-1)).toEqual(['pty-1', 1000]);
    events.disposeAcks();
  });
});
