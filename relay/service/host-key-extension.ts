import * as z from 'zod/mini';
import '../core/zod-messages.js';
import { RelayMethod } from '../../provider/client/relay-protocol.js';
import { PtyRelayError } from '../../provider/errors.js';
import { needAdmin, needHost } from '../core/grant.js';
import type { HostRouter, RpcExtension } from '../core/rpc-types.js';

const HostKeyParams = z.lazy(() => z.object({ host: z.string().check(z.minLength(1)) }));
const TrustParams = z.lazy(() =>
  z.object({
    host: z.string().check(z.minLength(1)),
    fingerprint: z.string().check(z.regex(/^SHA256:[A-Za-z0-9+/]+$/, 'a SHA256:… fingerprint')),
    replace: z.optional(z.boolean()),
  }),
);

function parse<T>(schema: z.ZodMiniType<T>, params: unknown, method: string): T {
  const r = schema.safeParse(params);
  if (!r.success) {
    const issue = r.error.issues[0];
    throw new PtyRelayError(
      'INVALID_ARGUMENT',
      `${method}: ${issue?.path.join('.') || 'params'}: ${issue?.message}`,
    );
  }
  return r.data;
}

/**
 * `ptyrelay/hostKey` and `ptyrelay/trustHostKey`: what an SSH host presents and recording it in
 * known_hosts once a person confirmed the fingerprint (the CLI's prompt and `hosts trust`).
 */
export function createHostKeyExtension(router: HostRouter): RpcExtension {
  const admin = (host: string) => {
    if (!router.hostKeys)
      throw new PtyRelayError('UNKNOWN_HOST', `no SSH host named ${host} is configured`, { host });
    return router.hostKeys(host);
  };
  return {
    name: 'ptyrelay-hostkeys',
    methods: {
      [RelayMethod.hostKey]: async (conn, params) => {
        const { host } = parse(HostKeyParams, params, RelayMethod.hostKey);
        needHost(conn.grant, host);
        return admin(host).inspect();
      },
      [RelayMethod.trustHostKey]: async (conn, params) => {
        // Trusting a key decides who the relay types passwords and keystrokes to.
        needAdmin(conn.grant, 'trust host keys');
        const p = parse(TrustParams, params, RelayMethod.trustHostKey);
        return admin(p.host).trust(p.fingerprint, p.replace === true);
      },
    },
  };
}
