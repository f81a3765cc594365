/**
 * `Match` lines of an OpenSSH client config (readconf.c `match_cfg_line`): every criterion must hold,
 * each may be negated with `!`, and a criterion's argument is a comma-separated pattern list.
 */
import { matchPatternList } from './known-hosts.js';

/** Raised for a `Match` line OpenSSH would refuse too. Re-exported by ssh-config.ts as SshConfigError. */
export class SshConfigError extends Error {
  override name = 'SshConfigError';
}

/** What a `Match` line is compared with at the point of the file where it stands. */
export interface MatchSubject {
  /** HostName obtained so far (its %h expanded), else the alias. */
  host: string;
  /** The alias as given on the command line (here: the relay's `host`). */
  originalHost: string;
  /** Remote user obtained so far, else the local user. */
  user: string;
  localUser: string;
}

/** Criteria that take a pattern list, and the subject field each one compares. */
const WITH_PATTERNS: Record<string, keyof MatchSubject | undefined> = {
  host: 'host',
  originalhost: 'originalHost',
  user: 'user',
  localuser: 'localUser',
  // Known to OpenSSH, never true here: ptyrelay runs no commands and has no tags or canonicalisation.
  exec: undefined,
  localnetwork: undefined,
  tagged: undefined,
};
/** Criteria without an argument; only `all` holds here (no canonicalisation, no final pass). */
const WITHOUT_ARGUMENT = new Set(['all', 'canonical', 'final']);

interface Criterion {
  name: string;
  negated: boolean;
  patterns?: string[];
}

function parseCriteria(args: readonly string[], where: string): Criterion[] {
  if (args.length === 0)
    throw new SshConfigError(`${where}: Match needs a criterion (e.g. "Match host NAME")`);
  const out: Criterion[] = [];
  for (let i = 0; i < args.length; i++) {
    const raw = args[i]!;
    const negated = raw.startsWith('!');
    const name = (negated ? raw.slice(1) : raw).toLowerCase();
    if (WITHOUT_ARGUMENT.has(name)) {
      if (name === 'all' && (args.length > 1 || negated))
        throw new SshConfigError(`${where}: Match all must stand alone`);
      out.push({ name, negated });
    } else if (name in WITH_PATTERNS) {
      const value = args[++i];
      if (value === undefined) throw new SshConfigError(`${where}: Match ${name} needs an argument`);
      out.push({ name, negated, patterns: value.split(',') });
    } else {
      throw new SshConfigError(`${where}: unsupported Match criterion '${raw}'`);
    }
  }
  return out;
}

/** Throws SshConfigError (with `where`) for a malformed `Match` line. */
export function validateMatch(args: readonly string[], where: string): void {
  parseCriteria(args, where);
}

/** Whether a (validated) `Match` line's criteria all hold for `s`. */
export function matchCriteria(args: readonly string[], s: MatchSubject): boolean {
  for (const c of parseCriteria(args, 'Match')) {
    let hit: boolean;
    if (c.name === 'all') hit = true;
    else if (c.patterns === undefined) hit = false;
    else {
      const field = WITH_PATTERNS[c.name];
      hit = field !== undefined && matchPatternList(s[field], c.patterns);
    }
    if (hit === c.negated) return false;
  }
  return true;
}
