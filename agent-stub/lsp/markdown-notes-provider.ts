import { type Dirent, readdir, readFile } from 'node:fs';
import { basename, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import {
  assertNever,
  type LspLocation,
  type LspPosition,
  type LspProvider,
  type LspProviderQuery,
  type LspQueryResult,
} from '../../provider/lsp-seam.js';
import { resolveWorkspace } from './workspace-paths.js';

/* Callback functions, promisified: a daemon that never serves code navigation loads no `node:fs/promises`. */
const readDir = promisify(readdir);
const readText = promisify(readFile);

/**
 * A provider that needs no language server (docs/lsp.md, the seam's example): `[[note]]` links
 * in Markdown files are the symbols. Definition: the note of that name (`note.md` anywhere in the
 * workspace), line 0. References: the declaration (that same line 0) and every link to it.
 * Implementation: none — a legal answer, the four operations are the seam's union, not four
 * promises. Hover: the start of the note.
 */

/** Notes looked at in one workspace at most (a huge tree is cut, not walked for minutes). */
const MAX_NOTES = 10_000;
/** A note larger than this is skipped. */
const MAX_NOTE_BYTES = 1024 * 1024;
/** Hover shows the note's first lines, this many at most. */
const HOVER_LINES = 12;
/** `[[name]]`, `[[name|label]]`, `[[name#heading]]`. */
const LINK = /\[\[([^[\]|#\n]+)(?:[|#][^[\]\n]*)?\]\]/g;

export const MARKDOWN_NOTES_ID = 'markdown-notes';

interface Link {
  name: string;
  line: number;
  start: number;
  end: number;
}

/** The links of one line of text, with their columns in UTF-16 units (JavaScript's own). */
export function linksIn(text: string, line: number): Link[] {
  const out: Link[] = [];
  for (const m of text.matchAll(LINK)) {
    const name = m[1]!.trim();
    if (name !== '') out.push({ name, line, start: m.index, end: m.index + m[0].length });
  }
  return out;
}

/** The link under the position, or the line's first link. */
function targetAt(source: string, p: LspPosition): string | undefined {
  const links = linksIn(source.split('\n')[p.line] ?? '', p.line);
  return (links.find((l) => l.start <= p.character && p.character < l.end) ?? links[0])?.name;
}

async function notesUnder(root: string, signal: AbortSignal): Promise<string[]> {
  const out: string[] = [];
  const dirs = [root];
  while (dirs.length > 0 && out.length < MAX_NOTES) {
    if (signal.aborted) throw signal.reason;
    const dir = dirs.shift()!;
    let entries: Dirent[];
    try {
      entries = await readDir(dir, { withFileTypes: true });
    } catch {
      continue; // unreadable: not part of the workspace's notes
    }
    for (const e of entries) {
      if (e.name.startsWith('.') || e.name === 'node_modules') continue;
      if (e.isDirectory()) dirs.push(join(dir, e.name));
      else if (e.isFile() && e.name.toLowerCase().endsWith('.md')) out.push(join(dir, e.name));
    }
  }
  return out.sort().slice(0, MAX_NOTES);
}

async function readNote(path: string): Promise<string | undefined> {
  try {
    const text = await readText(path, 'utf8');
    return text.length > MAX_NOTE_BYTES ? undefined : text;
  } catch {
    return undefined;
  }
}

const noteName = (path: string) => basename(path).replace(/\.md$/i, '');
const lineZero = (path: string): LspLocation => ({
  uri: pathToFileURL(path).href,
  range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } },
});

/** Every link to `name` in the workspace's notes. */
async function linksTo(name: string, notes: string[], signal: AbortSignal): Promise<LspLocation[]> {
  const out: LspLocation[] = [];
  for (const path of notes) {
    if (signal.aborted) throw signal.reason;
    const text = await readNote(path);
    if (text === undefined) continue;
    const uri = pathToFileURL(path).href;
    text.split('\n').forEach((line, n) => {
      for (const l of linksIn(line, n))
        if (l.name === name)
          out.push({
            uri,
            range: { start: { line: n, character: l.start }, end: { line: n, character: l.end } },
          });
    });
  }
  return out;
}

export class MarkdownNotesProvider implements LspProvider {
  readonly extensionToLanguage = Object.freeze({ '.md': 'markdown' });

  constructor(readonly id: string = MARKDOWN_NOTES_ID) {}

  async query(request: LspProviderQuery, signal = new AbortController().signal): Promise<LspQueryResult> {
    // The root is the caller's; the provider resolves it and hands back the URI it resolved.
    const { root, file } = await resolveWorkspace(request.workspaceRoot, request.filePath);
    const resolvedWorkspaceUri = pathToFileURL(root).href;
    const target = targetAt((await readNote(file)) ?? '', request.position);
    const locations = (list: LspLocation[]): LspQueryResult => ({
      kind: 'locations',
      locations: list,
      resolvedWorkspaceUri,
    });
    const op = request.operation;
    switch (op) {
      case 'goToImplementation':
        return locations([]);
      case 'goToDefinition':
      case 'findReferences': {
        if (target === undefined) return locations([]);
        const notes = await notesUnder(root, signal);
        const declaration = notes.filter((p) => noteName(p) === target).map(lineZero);
        if (op === 'goToDefinition') return locations(declaration);
        return locations([...declaration, ...(await linksTo(target, notes, signal))]);
      }
      case 'hover': {
        if (target === undefined) return { kind: 'hover', content: null };
        const note = (await notesUnder(root, signal)).find((p) => noteName(p) === target);
        const text = note === undefined ? undefined : await readNote(note);
        const head = text?.split('\n').slice(0, HOVER_LINES).join('\n').trim();
        return { kind: 'hover', content: head ? head : null };
      }
      default:
        return assertNever(op);
    }
  }
}
