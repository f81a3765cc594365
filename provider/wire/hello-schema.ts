import * as z from 'zod/mini';
import type { HelloMessage } from './messages.js';

/**
 * A hello as either end accepts it (the daemon a client's, the relay a daemon's). Unknown fields
 * pass (a newer peer may add some); known ones must have their types, so neither end acts on a
 * hello it only cast. `zod/mini`: the stub bundles it (agent-messages.ts).
 */
export const helloSchema = z.lazy(() =>
  z.looseObject({
    t: z.literal('hello'),
    protocol: z.int({ error: 'must be an integer' }),
    buildId: z.string({ error: 'must be a string' }),
    role: z.string({ error: 'must be a string' }),
    pid: z.optional(z.int({ error: 'must be an integer' })),
    version: z.optional(z.string({ error: 'must be a string' })),
    linkId: z.optional(z.string({ error: 'must be a string' })),
    inputEpoch: z.optional(z.string({ error: 'must be a string' })),
    legacy: z.optional(z.boolean({ error: 'must be true or false' })),
    idScope: z.optional(z.literal('host')),
    binaryAcks: z.optional(z.boolean({ error: 'must be true or false' })),
    inputOrigin: z.optional(z.boolean({ error: 'must be true or false' })),
  }),
);

/** The hello in `m`, or a message naming the first bad field. */
export function parseHello(m: unknown): { hello: HelloMessage } | { error: string } {
  const r = helloSchema.safeParse(m);
  if (r.success) return { hello: r.data };
  const issue = r.error.issues[0];
  return { error: `${issue?.path.join('.') || 'hello'} ${issue?.message ?? 'is invalid'}` };
}
