const encoder = new TextEncoder();

/**
 * The bytes of a write (`IPtyProvider.write`): a string is encoded as UTF-8.
 *
 * One code path for every size. `Buffer.from(string)` takes another one from 4 KiB on (Node's
 * `createFromString` instead of the pooled copy a keystroke gets), which stayed cold until the
 * relay's 70th paste and was then compiled during one (a 1.8–4.5 ms TurboFan job on the relay's
 * compiler thread: among the slowest pastes of the bench's runs; docs/benchmarks.md, eleventh
 * round). `TextEncoder.encode` is one native call whatever the length, warm from the first keys.
 */
export function inputBytes(data: string | Uint8Array): Uint8Array {
  if (typeof data !== 'string') return data;
  return encoder.encode(data);
}
