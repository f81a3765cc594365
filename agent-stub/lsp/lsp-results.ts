import * as z from 'zod/mini';
import { PtyRelayError } from '../../provider/errors.js';
import type { LspLocation } from '../../provider/lsp-seam.js';
import { MAX_LSP_HOVER_CHARS, MAX_LSP_LOCATIONS } from '../../provider/wire/lsp-messages.js';

/**
 * A language server's answers, checked and normalized to the seam's shapes: a definition,
 * implementation or references answer (`Location | Location[] | LocationLink[] | null`) to a
 * list of locations, a hover (`MarkupContent | MarkedString | MarkedString[]`) to text or null.
 * What a server sends is data from another program: schemas, not casts.
 */

const position = z.object({ line: z.int().check(z.minimum(0)), character: z.int().check(z.minimum(0)) });
const range = z.object({ start: position, end: position });
const location = z.object({ uri: z.string(), range });
const locationLink = z.object({
  targetUri: z.string(),
  targetRange: range,
  targetSelectionRange: z.optional(range),
});
const locations = z.nullable(z.union([location, z.array(z.union([location, locationLink]))]));

const markedString = z.union([z.string(), z.object({ language: z.string(), value: z.string() })]);
const markup = z.object({ kind: z.string(), value: z.string() });
const hover = z.nullable(
  z.object({ contents: z.union([markup, markedString, z.array(markedString)]), range: z.optional(range) }),
);

function unexpected(method: string, error: z.core.$ZodError): PtyRelayError {
  const issue = error.issues[0];
  const at = issue?.path.length ? ` at ${issue.path.join('.')}` : '';
  return new PtyRelayError(
    'LSP_REQUEST_FAILED',
    `the language server answered ${method} with an unexpected shape${at}: ${issue?.message ?? 'invalid'}`,
  );
}

/** Locations of a definition, implementation or references answer: in the server's order, duplicates dropped. */
export function normalizeLocations(method: string, raw: unknown): LspLocation[] {
  const r = locations.safeParse(raw ?? null);
  if (!r.success) throw unexpected(method, r.error);
  if (r.data === null) return [];
  const list = Array.isArray(r.data) ? r.data : [r.data];
  const seen = new Set<string>();
  const out: LspLocation[] = [];
  for (const item of list) {
    const loc: LspLocation =
      'targetUri' in item
        ? { uri: item.targetUri, range: item.targetSelectionRange ?? item.targetRange }
        : { uri: item.uri, range: item.range };
    const key = `${loc.uri}:${loc.range.start.line}:${loc.range.start.character}:${loc.range.end.line}:${loc.range.end.character}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(loc);
    if (out.length === MAX_LSP_LOCATIONS) break;
  }
  return out;
}

/** A hover's text (Markdown as the server wrote it; a language-tagged string as a fenced block), or null. */
export function normalizeHover(raw: unknown): string | null {
  const r = hover.safeParse(raw ?? null);
  if (!r.success) throw unexpected('textDocument/hover', r.error);
  if (r.data === null) return null;
  const { contents } = r.data;
  const parts = Array.isArray(contents) ? contents : [contents];
  const text = parts
    .map((p) =>
      typeof p === 'string' ? p : 'kind' in p ? p.value : `\`\`\`${p.language}\n${p.value}\n\`\`\``,
    )
    .filter((s) => s.trim() !== '')
    .join('\n\n');
  if (text === '') return null;
  return text.length > MAX_LSP_HOVER_CHARS ? text.slice(0, MAX_LSP_HOVER_CHARS) : text;
}
