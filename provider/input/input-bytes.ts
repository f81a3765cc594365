const encoder = new TextEncoder();

/**
 * The bytes of a write (`IPtyProvider.write`): a string is encoded as UTF-8, by one code path for
 * every size (`TextEncoder.encode`; `Buffer.from(string)` takes another one from 4 KiB on).
 */
export function inputBytes(data: string | Uint8Array): Uint8Array {
  if (typeof data !== 'string') return data;
  return encoder.encode(data);
}
