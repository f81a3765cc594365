import { createRequire } from 'node:module';
import type * as Ssh2 from 'ssh2';

/**
 * The one place the relay reaches past ssh2's package entry: it loads the two parts it uses, the
 * client and the key parser, from their own modules, written against {@link SSH2_PINNED}
 * (package.json pins it exactly). The entry also loads ssh2's server, key generator and HTTP
 * agents, and with those `https` and `tls`: about 3 MB more RSS in every relay that has SSH hosts
 * (adoption connects to them at start). When a module is missing or shaped otherwise, the entry is
 * used instead and {@link ssh2ShapeProblem} says why (the SSH provider logs it once). Contract
 * test: test/unit/adapter-ssh2.test.ts.
 */
export const SSH2_PINNED = '1.17.0';

type ClientClass = typeof Ssh2.Client;
type ParseKey = typeof Ssh2.utils.parseKey;

export interface Ssh2Parts {
  Client: ClientClass;
  parseKey: ParseKey;
}

interface Loaded {
  parts: Ssh2Parts;
  problem?: string;
}

let loaded: Loaded | undefined;

/** Why the modules are not shaped as the pinned version's, or undefined when they are. */
export function ssh2ModulesProblem(client: unknown, keyParser: unknown): string | undefined {
  if (typeof client !== 'function') return "'lib/client.js' does not export a class";
  if (typeof (client as { prototype?: { connect?: unknown } }).prototype?.connect !== 'function')
    return "'lib/client.js' exports a class without connect()";
  if (typeof (keyParser as { parseKey?: unknown } | undefined)?.parseKey !== 'function')
    return "'lib/protocol/keyParser.js' has no parseKey()";
  return undefined;
}

function load(): Loaded {
  const require = createRequire(import.meta.url);
  let problem: string | undefined;
  try {
    const client: unknown = require('ssh2/lib/client.js');
    const keyParser: unknown = require('ssh2/lib/protocol/keyParser.js');
    problem = ssh2ModulesProblem(client, keyParser);
    if (!problem)
      return {
        parts: { Client: client as ClientClass, parseKey: (keyParser as { parseKey: ParseKey }).parseKey },
      };
  } catch (err) {
    problem = `its modules did not load (${(err as Error).message})`;
  }
  const entry = require('ssh2') as typeof Ssh2;
  return { parts: { Client: entry.Client, parseKey: entry.utils.parseKey }, problem };
}

/** ssh2's client class and key parser (loaded on the first call). */
export function ssh2Parts(): Ssh2Parts {
  loaded ??= load();
  return loaded.parts;
}

/**
 * Undefined when ssh2 is shaped as the pinned version; else what differs, and that its package
 * entry (with its HTTP agents) serves instead.
 */
export function ssh2ShapeProblem(): string | undefined {
  ssh2Parts();
  const problem = loaded?.problem;
  return problem && `ssh2 is not shaped as ${SSH2_PINNED} was: ${problem}; its package entry is used`;
}
