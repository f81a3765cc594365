import * as z from 'zod/mini';
import '../core/zod-messages.js';
import { RelayMethod } from '../../provider/client/relay-protocol.js';
import { PtyRelayError } from '../../provider/errors.js';
import { needAdmin, TOKEN_SCOPES } from '../core/grant.js';
import type { RpcExtension } from '../core/rpc-types.js';
import type { TokenAuthority } from './token-authority.js';
import { parseTtl, type TokenStore } from './token-store.js';

const CreateParams = z.lazy(() =>
  z.strictObject({
    scope: z.enum(TOKEN_SCOPES),
    name: z.optional(z.string()),
    hosts: z.optional(z.array(z.string())),
    terminal: z.optional(z.string()),
    ttl: z.optional(z.string()),
  }),
);
const RevokeParams = z.lazy(() => z.strictObject({ name: z.string().check(z.minLength(1)) }));

function parse<T>(schema: z.ZodMiniType<T>, params: unknown, method: string): T {
  const r = schema.safeParse(params);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  throw new PtyRelayError(
    'INVALID_ARGUMENT',
    `${method}: ${issue?.path.join('.') || 'params'}: ${issue?.message}`,
  );
}

/**
 * `ptyrelay/tokenCreate|tokenList|tokenRevoke`: token management over the API, for admin tokens
 * only (the CLI's `ptyrelay token` works on the store directly; a running relay notices).
 */
export function createTokenExtension(auth: TokenAuthority): RpcExtension {
  const store = (): TokenStore => {
    if (!auth.store)
      throw new PtyRelayError('INVALID_ARGUMENT', 'this relay has no token store (only its startup token)');
    return auth.store;
  };
  return {
    name: 'ptyrelay-tokens',
    methods: {
      [RelayMethod.tokenCreate]: async (conn, params) => {
        needAdmin(conn.grant, 'manage tokens');
        const p = parse(CreateParams, params, RelayMethod.tokenCreate);
        const { record, token } = store().create({
          scope: p.scope,
          ...(p.name !== undefined ? { name: p.name } : {}),
          ...(p.hosts ? { hosts: p.hosts } : {}),
          ...(p.terminal !== undefined ? { terminal: p.terminal } : {}),
          ...(p.ttl !== undefined ? { ttlMs: parseTtl(p.ttl) } : {}),
        });
        const { sha256: _hash, v: _v, ...shown } = record;
        return { token, record: shown };
      },
      [RelayMethod.tokenList]: async (conn) => {
        needAdmin(conn.grant, 'manage tokens');
        return { tokens: store().list() };
      },
      [RelayMethod.tokenRevoke]: async (conn, params) => {
        needAdmin(conn.grant, 'manage tokens');
        const { name } = parse(RevokeParams, params, RelayMethod.tokenRevoke);
        const { sha256: _hash, v: _v, ...revoked } = store().revoke(name);
        // After this reply has gone out: a token may revoke itself.
        setImmediate(() => auth.refresh());
        return { revoked };
      },
    },
  };
}
