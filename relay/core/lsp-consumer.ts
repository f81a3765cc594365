import { isAbsolute } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PtyRelayError } from '../../provider/errors.js';
import { type LspLocation, type LspQueryResult, toToolPosition } from '../../provider/lsp-seam.js';

/**
 * The consumer side of the code-navigation seam, shared by the tools facing people and models
 * (the CLI's `nav`, the MCP `lsp` tool): the workspace root they pick, and results shown with
 * positions 1-based (the flip out: plus one; columns in UTF-16 code units) and paths relative to
 * the workspace the provider resolved — never to the caller's own idea of the root, which may
 * differ by a symlink.
 */

/**
 * The workspace root of a query: the one given, else the nearest ancestor of the (absolute) file
 * holding `.git`, which `lookup` asks the host for. INVALID_ARGUMENT when there is none.
 */
export async function pickWorkspaceRoot(
  host: string,
  file: string,
  root: string | undefined,
  lookup: (host: string, file: string) => Promise<string | null>,
): Promise<string> {
  if (root !== undefined) {
    if (!isAbsolute(root))
      throw new PtyRelayError(
        'INVALID_ARGUMENT',
        `the root must be an absolute path on ${host}, got ${root}`,
      );
    return root;
  }
  if (!isAbsolute(file))
    throw new PtyRelayError(
      'INVALID_ARGUMENT',
      `${file} is relative: give an absolute path on ${host}, or a root`,
    );
  const found = await lookup(host, file);
  if (found === null)
    throw new PtyRelayError(
      'INVALID_ARGUMENT',
      `no directory above ${file} on ${host} holds .git: give a root`,
      {
        host,
        file,
      },
    );
  return found;
}

/** One location for a person or a model: 1-based, the path relative to the workspace when inside it. */
export interface ToolLocation {
  path: string;
  line: number;
  column: number;
  endLine: number;
  endColumn: number;
}

function pathOf(uri: string): string {
  try {
    return fileURLToPath(uri);
  } catch {
    return uri; // not a file URI: shown as it came
  }
}

/** `uri`'s path relative to the workspace at `workspaceUri`, or its absolute path when outside it. */
export function relativePath(uri: string, workspaceUri: string): string {
  const path = pathOf(uri);
  const root = pathOf(workspaceUri).replace(/\/+$/, '');
  return path.startsWith(`${root}/`) ? path.slice(root.length + 1) : path;
}

export function toolLocation(loc: LspLocation, workspaceUri: string): ToolLocation {
  const start = toToolPosition(loc.range.start);
  const end = toToolPosition(loc.range.end);
  return {
    path: relativePath(loc.uri, workspaceUri),
    line: start.line,
    column: start.column,
    endLine: end.line,
    endColumn: end.column,
  };
}

/** What a result says, for a tool: the workspace and its locations, or the hover text. */
export type ToolResult =
  | { kind: 'locations'; workspace: string; locations: ToolLocation[] }
  | { kind: 'hover'; content: string | null };

export function toolResult(r: LspQueryResult): ToolResult {
  if (r.kind === 'hover') return r;
  return {
    kind: 'locations',
    workspace: pathOf(r.resolvedWorkspaceUri),
    locations: r.locations.map((l) => toolLocation(l, r.resolvedWorkspaceUri)),
  };
}

/** `path:line:column` lines (what editors and terminals open), or the hover text. */
export function toolResultText(r: ToolResult, operation: string): string {
  if (r.kind === 'hover') return r.content ?? 'no hover information at that position';
  if (r.locations.length === 0) return `${operation}: no locations (workspace ${r.workspace})`;
  const n = r.locations.length;
  const head = `${operation}: ${n} location${n === 1 ? '' : 's'} (workspace ${r.workspace})`;
  return [head, ...r.locations.map((l) => `${l.path}:${l.line}:${l.column}`)].join('\n');
}
