import { readFileSync } from 'node:fs';
import type { AnyAuthMethod } from 'ssh2';
import { PtyRelayError } from '../../provider/errors.js';
import type { Logger } from '../core/log.js';
import type { ResolvedHost } from './host-config.js';
import { ssh2Parts } from './ssh2-modules.js';

/** What became of one credential: offered to the server, or why it could not be. */
export interface TriedCredential {
  method: 'agent' | 'publickey' | 'password';
  /** Identity file (publickey). */
  path?: string;
  /** `offered` (the server did not accept it), `file not found`, `unreadable: …`, `not a usable key: …`. */
  result: string;
}

/** Auth methods to offer, in OpenSSH's order, and what could not be offered with the reason. */
export interface AuthPlan {
  methods: AnyAuthMethod[];
  tried: TriedCredential[];
}

/**
 * Builds the auth methods for a host: the agent (unless IdentitiesOnly, which ptyrelay takes as
 * "identity files only"), each identity file that loads, then the password when configured. A
 * file that is missing or does not parse is recorded with why, so AUTH_FAILED can name it.
 */
export function planAuth(h: ResolvedHost, log?: Logger): AuthPlan {
  const methods: AnyAuthMethod[] = [];
  const tried: TriedCredential[] = [];
  const username = h.user;
  const agent = process.env.SSH_AUTH_SOCK;
  if (h.useAgent && agent && !h.identitiesOnly) {
    methods.push({ type: 'agent', username, agent });
    tried.push({ method: 'agent', result: 'offered' });
  }
  for (const path of h.identityFiles) {
    let data: Buffer;
    try {
      data = readFileSync(path);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      const result = code === 'ENOENT' ? 'file not found' : `unreadable: ${code ?? (err as Error).message}`;
      log?.warn({ path, result }, 'identity file not usable');
      tried.push({ method: 'publickey', path, result });
      continue;
    }
    const parsed = ssh2Parts().parseKey(data, h.passphrase);
    if (parsed instanceof Error) {
      const result = `not a usable key: ${parsed.message}`;
      log?.warn({ path, result }, 'identity file not usable');
      tried.push({ method: 'publickey', path, result });
      continue;
    }
    methods.push({
      type: 'publickey',
      username,
      key: data,
      ...(h.passphrase ? { passphrase: h.passphrase } : {}),
    });
    tried.push({ method: 'publickey', path, result: 'offered' });
  }
  if (h.password !== undefined) {
    methods.push({ type: 'password', username, password: h.password });
    tried.push({ method: 'password', result: 'offered' });
  }
  return { methods, tried };
}

/** AUTH_FAILED naming every credential and what became of it (`details.tried`, `details.cause: 'auth'`). */
export function authFailed(where: string, tried: readonly TriedCredential[]): PtyRelayError {
  const words = tried.map((t) => {
    const what = t.method === 'publickey' ? t.path : t.method;
    return t.result === 'offered' ? `${what} (not accepted)` : `${what} (${t.result})`;
  });
  const list = words.length > 0 ? words.join(', ') : 'no credentials (no agent, identity file or password)';
  return new PtyRelayError('AUTH_FAILED', `authentication to ${where} failed; tried: ${list}`, {
    cause: 'auth',
    tried,
  });
}
