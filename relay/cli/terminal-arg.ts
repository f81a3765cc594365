import type { RelayClient } from '../../provider/client/relay-client.js';
import { usageError } from './command.js';

/**
 * A terminal argument in its only accepted form, HOST/ID. A bare id (`pty-1`) is refused with
 * the terminals it could mean, so a command never picks a host silently.
 */
export async function terminalArg(client: RelayClient, arg: string): Promise<string> {
  if (arg.includes('/')) return arg;
  const matches = (await client.listTerminals())
    .map((t) => t.id)
    .filter((id) => id.endsWith(`/${arg}`) || id.endsWith(`:${arg}`));
  throw usageError(
    matches.length > 0
      ? `terminal ids are HOST/ID: ${arg} matches ${matches.join(', ')}`
      : `terminal ids are HOST/ID (e.g. local/${arg}); no host has a terminal ${arg} (see ptyrelay ls)`,
  );
}
