/**
 * The code-navigation seam (docs/lsp.md; the DSH seed's LSP seam): what a caller asks, what a
 * provider answers, and the rules every registry applies to providers. Pure types and rules: no
 * processes, frames, document sync or protocol types cross it; those are a provider's own
 * business (agent-stub/lsp/stdio-lsp-provider.ts runs a language server behind it).
 *
 * Coordinates are LSP's: 0-based lines and 0-based UTF-16 code units. Tools facing a person or a
 * model speak 1-based line and column (UTF-16 units) and flip exactly twice: minus one on the
 * way in, plus one on the way out ({@link toSeamPosition}, {@link toToolPosition}).
 */

/**
 * The closed union of operations. No symbol lists, no call hierarchy: they need other result
 * shapes. A fifth operation fails to compile in every exhaustive switch ({@link assertNever}).
 */
export const LSP_OPERATIONS = ['goToDefinition', 'findReferences', 'goToImplementation', 'hover'] as const;
export type LspOperation = (typeof LSP_OPERATIONS)[number];

/** A position in a document: 0-based line, 0-based UTF-16 code unit in that line. */
export interface LspPosition {
  line: number;
  character: number;
}

export interface LspRange {
  start: LspPosition;
  end: LspPosition;
}

export interface LspLocation {
  /** A `file://` URI. */
  uri: string;
  range: LspRange;
}

/**
 * One query as the caller states it. Every field is the caller's to fill, the workspace root
 * included: a provider supplies no defaults. `findReferences` always includes the declaration;
 * there is no switch for it.
 */
export interface LspQuery {
  operation: LspOperation;
  /** The document: absolute, or relative to `workspaceRoot`. */
  filePath: string;
  position: LspPosition;
  /** The workspace the provider resolves the file in (absolute). */
  workspaceRoot: string;
}

/** A query as a provider receives it: the seam adds the language id from the provider's own map. */
export interface LspProviderQuery extends LspQuery {
  /** From the provider's `extensionToLanguage`; only for syncing transient documents, never for selection. */
  languageId: string;
}

/**
 * The two result shapes. The three navigation operations give locations plus the workspace URI
 * the provider resolved (callers relativize locations against it, never against their own idea
 * of the root); hover gives content or null.
 */
export type LspQueryResult =
  | { kind: 'locations'; locations: LspLocation[]; resolvedWorkspaceUri: string }
  | { kind: 'hover'; content: string | null };

/** Opaque provider name, unique in a registry. */
export type LspProviderId = string;

/** A provider is these three things and nothing else. */
export interface LspProvider {
  readonly id: LspProviderId;
  /** Lowercase extensions with a leading dot → language id (`{ '.ts': 'typescript' }`). */
  readonly extensionToLanguage: Readonly<Record<string, string>>;
  query(request: LspProviderQuery, signal?: AbortSignal): Promise<LspQueryResult>;
}

/** The result shape an operation has. */
export function resultKindOf(op: LspOperation): LspQueryResult['kind'] {
  switch (op) {
    case 'goToDefinition':
    case 'findReferences':
    case 'goToImplementation':
      return 'locations';
    case 'hover':
      return 'hover';
    default:
      return assertNever(op);
  }
}

/** Compile-time exhaustiveness for the closed union. */
export function assertNever(v: never): never {
  throw new TypeError(`unexpected value ${String(v)}`);
}

/** Extension keys: a dot, then lowercase letters, digits, `_`, `-`, `+` (`.ts`, `.c++`). */
const EXTENSION_KEY = /^\.[a-z0-9_+-]+$/;

/**
 * Why `key` cannot be an extension key (undefined when it can): lowercase with a leading dot,
 * one dot only (selection looks at the last dot: `foo.d.ts` is `.ts`).
 */
export function extensionKeyProblem(key: string): string | undefined {
  if (EXTENSION_KEY.test(key)) return undefined;
  if (!key.startsWith('.')) return `extension ${JSON.stringify(key)} must start with a dot`;
  if (key.toLowerCase() !== key) return `extension ${JSON.stringify(key)} must be lowercase`;
  return `extension ${JSON.stringify(key)} must be a dot followed by letters, digits, _, + or -`;
}

/**
 * What is wrong with a provider about to be registered beside `taken` (ids and extensions other
 * providers hold), or undefined: an empty id, a taken id, a bad or taken extension key, or two
 * keys of its own that differ only in case (`.TS` and `.ts`). Checked as a whole, before
 * anything is reserved.
 */
export function registrationProblem(
  p: Pick<LspProvider, 'id' | 'extensionToLanguage'>,
  taken: { ids: ReadonlySet<string>; extensions: ReadonlyMap<string, string> },
): string | undefined {
  if (typeof p.id !== 'string' || p.id.trim() === '') return 'a provider needs a non-empty id';
  if (taken.ids.has(p.id)) return `provider id ${JSON.stringify(p.id)} is already registered`;
  const keys = Object.keys(p.extensionToLanguage);
  if (keys.length === 0) return `provider ${p.id} lists no extension`;
  const folded = new Set<string>();
  for (const key of keys) {
    if (folded.has(key.toLowerCase()))
      return `provider ${p.id} lists ${JSON.stringify(key)} twice (extensions differ only in case)`;
    folded.add(key.toLowerCase());
  }
  for (const key of keys) {
    const problem = extensionKeyProblem(key);
    if (problem) return `provider ${p.id}: ${problem}`;
    const language = p.extensionToLanguage[key];
    if (typeof language !== 'string' || language === '')
      return `provider ${p.id}: extension ${key} needs a language id`;
    const owner = taken.extensions.get(key);
    if (owner !== undefined) return `provider ${p.id}: extension ${key} belongs to provider ${owner}`;
  }
  return undefined;
}

/**
 * The extension a path selects by: the last dot of its base name onward, lowercased. `foo.d.ts`
 * is `.ts`; a dotfile (`.bashrc`) or a name without a dot has none (undefined) and matches nothing.
 */
export function extensionOf(path: string): string | undefined {
  const base = path.slice(Math.max(path.lastIndexOf('/'), path.lastIndexOf('\\')) + 1);
  const dot = base.lastIndexOf('.');
  if (dot <= 0 || dot === base.length - 1) return undefined;
  return base.slice(dot).toLowerCase();
}

/** A tool's 1-based line and column (UTF-16 units) → the seam's 0-based position (the flip in). */
export function toSeamPosition(line: number, column: number): LspPosition {
  return { line: line - 1, character: column - 1 };
}

/** The seam's 0-based position → a tool's 1-based line and column (the flip out). */
export function toToolPosition(p: LspPosition): { line: number; column: number } {
  return { line: p.line + 1, column: p.character + 1 };
}
