import { z } from 'zod';
import type { HelloMessage } from './messages.js';

/**
 * A daemon's hello as the relay accepts it. Unknown fields pass (a newer daemon may add some);
 * known ones must have their types, so the relay never acts on a hello it only cast.
 */
export const helloSchema = z.looseObject({
  t: z.literal('hello'),
  protocol: z.number().int(),
  buildId: z.string(),
  role: z.string(),
  pid: z.number().int().optional(),
  version: z.string().optional(),
  linkId: z.string().optional(),
  inputEpoch: z.string().optional(),
  legacy: z.boolean().optional(),
  idScope: z.literal('host').optional(),
});

/** The hello in `m`, or a message saying what is wrong with it. */
export function parseHello(m: unknown): { hello: HelloMessage } | { error: string } {
  const r = helloSchema.safeParse(m);
  return r.success ? { hello: r.data } : { error: z.prettifyError(r.error) };
}
