import * as z from 'zod/mini';
import { extensionKeyProblem, registrationProblem } from '../../provider/lsp-seam.js';
import {
  type LspHostConfig,
  type LspProviderConfig,
  MAX_LSP_PROVIDERS,
  MAX_LSP_QUERY_TIMEOUT_MS,
} from '../../provider/wire/lsp-messages.js';
import {
  addIssue,
  anObject,
  type ConfigProblem,
  describe,
  integer,
  settings,
  text,
} from './config-validate.js';

/**
 * The relay config's `lsp` section (docs/config.md, docs/lsp.md): the code-navigation providers
 * each host enables. Off by default: no host has any. The relay fills every field of what it
 * sends with a query (the daemon adds no defaults), so the defaults live here.
 */

/** A query's deadline unless the section or the host sets one. */
export const DEFAULT_LSP_QUERY_TIMEOUT_MS = 30_000;
/** A language server with no query for this long is stopped. */
export const DEFAULT_LSP_IDLE_MS = 10 * 60_000;
/** The markdown-notes provider's id unless the config names it. */
const MARKDOWN_NOTES_ID = 'markdown-notes';
const PROVIDER_TYPES = ['stdio', 'markdown-notes'] as const;

/** Host name → what it sends with every query (validated, defaults filled). */
export type LspConfig = Record<string, LspHostConfig>;

const words = () =>
  z.array(z.string({ error: (iss) => `must be a string, got ${describe(iss.input)}` }), {
    error: (iss) => `must be an array of strings, got ${describe(iss.input)}`,
  });
const strings = () =>
  z.record(z.string(), z.string({ error: (iss) => `must be a string, got ${describe(iss.input)}` }), {
    error: (iss) => `must be an object of strings, got ${describe(iss.input)}`,
  });

const extensions = z.pipe(
  anObject().check((payload) => {
    for (const key of Object.keys(payload.value)) {
      const problem = extensionKeyProblem(key);
      if (problem) addIssue(payload, [], `: ${problem}`);
    }
  }),
  z.record(z.string(), text()),
);

const stdioSchema = settings({
  type: z.literal('stdio'),
  id: text('needs an id (the server\'s name, e.g. "typescript")'),
  command: text("needs a command (the server's program; absolute, or found on the host's PATH)"),
  args: z._default(words(), []),
  extensionToLanguage: extensions,
  initializationOptions: z.optional(z.unknown()),
  env: z._default(strings(), {}),
  idleMs: z._default(integer(1000, 24 * 3_600_000), DEFAULT_LSP_IDLE_MS),
});

const notesSchema = settings({
  type: z.literal('markdown-notes'),
  id: z._default(text(), MARKDOWN_NOTES_ID),
});

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** One provider, by its `type` (each type's own settings, so a typo names the right key). */
const providerSchema = z.pipe(
  z.unknown(),
  z.transform((v, payload): LspProviderConfig => {
    const type = isRecord(v) ? v.type : undefined;
    const schema = type === 'stdio' ? stdioSchema : type === 'markdown-notes' ? notesSchema : undefined;
    if (!schema) {
      addIssue(payload, ['type'], `must be one of ${PROVIDER_TYPES.join(', ')}, got ${describe(type)}`);
      return z.NEVER;
    }
    const r = schema.safeParse(v);
    if (r.success) return r.data;
    for (const issue of r.error.issues) {
      const keys = issue.code === 'unrecognized_keys' ? issue.keys : [];
      addIssue(payload, [...issue.path, ...keys], issue.message);
    }
    return z.NEVER;
  }),
);

const hostSchema = settings({
  providers: z
    .array(providerSchema, { error: (iss) => `must be an array of providers, got ${describe(iss.input)}` })
    .check(
      z.minLength(1, { error: 'must enable at least one provider' }),
      z.maxLength(MAX_LSP_PROVIDERS, { error: `must have at most ${MAX_LSP_PROVIDERS} providers` }),
    ),
  queryTimeoutMs: z.optional(integer(100, MAX_LSP_QUERY_TIMEOUT_MS)),
}).check((payload) => {
  const conflict = conflictIn(payload.value.providers);
  if (conflict) addIssue(payload, ['providers', conflict.index], `: ${conflict.message}`);
});

/** The `lsp` section as written; {@link lspConfigOf} turns it into what each host sends. */
export const lspSectionSchema = settings({
  queryTimeoutMs: z._default(integer(100, MAX_LSP_QUERY_TIMEOUT_MS), DEFAULT_LSP_QUERY_TIMEOUT_MS),
  hosts: z._default(z.record(z.string(), hostSchema), {}),
});
export type LspSection = z.output<typeof lspSectionSchema>;

/** The first registration a host's daemon would refuse (a taken id or extension): which provider, why. */
function conflictIn(providers: LspProviderConfig[]): { index: number; message: string } | undefined {
  const ids = new Set<string>();
  const exts = new Map<string, string>();
  for (const [i, p] of providers.entries()) {
    const languages = p.type === 'stdio' ? p.extensionToLanguage : { '.md': 'markdown' };
    const problem = registrationProblem(
      { id: p.id, extensionToLanguage: languages },
      { ids, extensions: exts },
    );
    if (problem) return { index: i, message: problem };
    ids.add(p.id);
    for (const ext of Object.keys(languages)) exts.set(ext, p.id);
  }
  return undefined;
}

/** Each host's config as its queries carry it: the deadline is the host's, else the section's. */
export function lspConfigOf(section: LspSection | undefined): LspConfig {
  const out: LspConfig = {};
  for (const [host, h] of Object.entries(section?.hosts ?? {}))
    out[host] = {
      providers: h.providers,
      queryTimeoutMs: h.queryTimeoutMs ?? section?.queryTimeoutMs ?? DEFAULT_LSP_QUERY_TIMEOUT_MS,
    };
  return out;
}

/** A host in `lsp.hosts` that is neither `local` nor configured, as the config's problem. */
export function lspHostsProblem(section: LspSection | undefined, hosts: string[]): ConfigProblem | undefined {
  const unknown = Object.keys(section?.hosts ?? {}).find((h) => !hosts.includes(h));
  if (unknown === undefined) return undefined;
  return { path: ['lsp', 'hosts', unknown], message: `is not a host (hosts: ${hosts.join(', ')})` };
}
