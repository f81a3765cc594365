import * as z from 'zod/mini';
import { LSP_OPERATIONS, type LspQuery, type LspQueryResult } from '../lsp-seam.js';
import { hostNameSchema } from './spawn-schema.js';

/**
 * Schemas of code navigation on the stub link (docs/lsp.md, docs/stub-protocol.md): `lspQuery`
 * (one query plus the host's provider config), `lspCancel` (the caller gave up), `lspRoot` (the
 * nearest ancestor holding `.git`, for consumers that pick a root by that rule) and the result.
 * The daemon checks the params, the relay the result. The config travels with every query, so a
 * config edit applies to the next query and no daemon keeps a stale one; the relay fills every
 * field (docs/config.md, `lsp`), the daemon adds no defaults. `zod/mini` (stub bundle size).
 */

/** Longest deadline a query may be given. */
export const MAX_LSP_QUERY_TIMEOUT_MS = 10 * 60_000;
/** Providers one host may enable. */
export const MAX_LSP_PROVIDERS = 32;
/** Locations a result may carry (a references list of a very common symbol is cut here). */
export const MAX_LSP_LOCATIONS = 10_000;
/** Hover text longer than this is cut. */
export const MAX_LSP_HOVER_CHARS = 64 * 1024;

const text = () => z.string({ error: 'must be a string' });
const nonEmpty = () => text().check(z.minLength(1, 'must not be empty'), z.maxLength(4096, 'is too long'));
const absolute = () =>
  nonEmpty().check(z.refine((v: string) => v.startsWith('/'), 'must be an absolute path'));
const count = () =>
  z
    .int({ error: 'must be an integer' })
    .check(z.minimum(0, 'must be at least 0'), z.maximum(2 ** 31 - 1, 'is too large'));
const millis = (max: number) =>
  z
    .int({ error: 'must be an integer' })
    .check(z.minimum(1, 'must be at least 1'), z.maximum(max, `must be at most ${max}`));

/** A language server the daemon runs (stdio): command line, extensions, initialization options. */
export const lspStdioConfigSchema = z.lazy(() =>
  z.object({
    type: z.literal('stdio'),
    id: nonEmpty(),
    command: nonEmpty(),
    args: z.array(text()),
    extensionToLanguage: z.record(text(), nonEmpty()),
    /** Sent as `initializationOptions` in `initialize`. */
    initializationOptions: z.optional(z.unknown()),
    /** Added to the daemon's environment for the server. */
    env: z.record(text(), text()),
    /** A server with no query for this long is stopped (started again on the next). */
    idleMs: millis(24 * 3_600_000),
  }),
);
export type LspStdioConfig = z.infer<typeof lspStdioConfigSchema>;

/** The `[[note]]` link provider for Markdown files (no language server). */
export const lspMarkdownNotesConfigSchema = z.lazy(() =>
  z.object({
    type: z.literal('markdown-notes'),
    id: nonEmpty(),
  }),
);

export const lspProviderConfigSchema = z.lazy(() =>
  z.discriminatedUnion('type', [lspStdioConfigSchema, lspMarkdownNotesConfigSchema]),
);
export type LspProviderConfig = z.infer<typeof lspProviderConfigSchema>;

/** What a host enables: its providers and the deadline every query gets. */
export const lspHostConfigSchema = z.lazy(() =>
  z.object({
    providers: z
      .array(lspProviderConfigSchema)
      .check(
        z.minLength(1, 'must enable at least one provider'),
        z.maxLength(MAX_LSP_PROVIDERS, `must have at most ${MAX_LSP_PROVIDERS} providers`),
      ),
    queryTimeoutMs: millis(MAX_LSP_QUERY_TIMEOUT_MS),
  }),
);
export type LspHostConfig = z.infer<typeof lspHostConfigSchema>;

const position = z.lazy(() => z.object({ line: count(), character: count() }));

export const lspQuerySchema = z.lazy(() =>
  z.object({
    operation: z.enum(LSP_OPERATIONS, { error: `must be one of ${LSP_OPERATIONS.join(', ')}` }),
    filePath: nonEmpty(),
    position,
    workspaceRoot: absolute(),
  }),
) satisfies z.ZodMiniType<LspQuery>;

export const lspQueryParamsSchema = z.lazy(() =>
  z.object({
    /** The caller's name for this query, for `lspCancel`. */
    queryId: nonEmpty(),
    query: lspQuerySchema,
    config: lspHostConfigSchema,
  }),
);
export type LspQueryParams = z.infer<typeof lspQueryParamsSchema>;

export const lspCancelParamsSchema = z.lazy(() => z.object({ queryId: nonEmpty() }));
export const lspRootParamsSchema = z.lazy(() => z.object({ filePath: absolute() }));

const range = z.lazy(() => z.object({ start: position, end: position }));

export const lspQueryResultSchema = z.lazy(() =>
  z.discriminatedUnion('kind', [
    z.object({
      kind: z.literal('locations'),
      locations: z
        .array(z.object({ uri: nonEmpty(), range }))
        .check(z.maxLength(MAX_LSP_LOCATIONS, `must have at most ${MAX_LSP_LOCATIONS} locations`)),
      resolvedWorkspaceUri: nonEmpty(),
    }),
    z.object({
      kind: z.literal('hover'),
      content: z.nullable(text().check(z.maxLength(MAX_LSP_HOVER_CHARS, 'is too long'))),
    }),
  ]),
) satisfies z.ZodMiniType<LspQueryResult>;

export const lspRootResultSchema = z.lazy(() => z.object({ root: z.nullable(text()) }));

/** `ptyrelay/lspQuery` params (the relay API): a host and one query in the seam's coordinates. */
export const relayLspQueryParamsSchema = z.lazy(() =>
  z.object({ host: hostNameSchema, query: lspQuerySchema }),
);
/** `ptyrelay/lspRoot` params. */
export const relayLspRootParamsSchema = z.lazy(() =>
  z.object({ host: hostNameSchema, filePath: absolute() }),
);
