import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { linksIn, MarkdownNotesProvider } from '../../agent-stub/lsp/markdown-notes-provider.js';
import type { LspProviderQuery, LspQueryResult } from '../../provider/lsp-seam.js';

const NOTES: Record<string, string> = {
  'Alpha.md': '# Alpha\n\nThe first note. See [[Beta]].\n',
  'Beta.md': '# Beta\n\nBeta links back to [[Alpha|the first]] and to [[Gamma]].\n',
  'deep/Gamma.md': '# Gamma\n\nOnly Beta links here. 😀 [[Alpha#top]] too.\n',
  '.hidden/Alpha.md': 'not a note of the workspace: [[Alpha]]\n',
};

describe('the [[note]] provider: four answers', () => {
  let root: string;
  let link: string;
  const p = new MarkdownNotesProvider();
  const ask = (
    operation: LspProviderQuery['operation'],
    filePath: string,
    line: number,
    character = 0,
    workspaceRoot = root,
  ) => p.query({ operation, filePath, position: { line, character }, workspaceRoot, languageId: 'markdown' });
  const spots = (r: LspQueryResult) =>
    r.kind === 'locations'
      ? r.locations.map(
          (l) =>
            `${l.uri.slice(r.resolvedWorkspaceUri.length + 1)}:${l.range.start.line}:${l.range.start.character}-${l.range.end.character}`,
        )
      : [];

  beforeAll(() => {
    root = realpathSync(mkdtempSync(join(tmpdir(), 'ptr-notes-')));
    for (const [rel, text] of Object.entries(NOTES)) {
      mkdirSync(dirname(join(root, rel)), { recursive: true });
      writeFileSync(join(root, rel), text);
    }
    link = `${root}-link`;
    symlinkSync(root, link);
  });
  afterAll(() => {
    rmSync(link, { force: true });
    rmSync(root, { recursive: true, force: true });
  });

  it('definition: the note of that name, line 0', async () => {
    const r = await ask('goToDefinition', 'Alpha.md', 2);
    expect(r).toMatchObject({ kind: 'locations', resolvedWorkspaceUri: pathToFileURL(root).href });
    expect(spots(r)).toEqual(['Beta.md:0:0-0']);
    // A note in a subfolder; the link under the cursor when a line has two.
    const beta = NOTES['Beta.md']!.split('\n')[2]!;
    expect(spots(await ask('goToDefinition', 'Beta.md', 2, beta.indexOf('[[Gamma')))).toEqual([
      'deep/Gamma.md:0:0-0',
    ]);
    expect(spots(await ask('goToDefinition', 'Beta.md', 2, beta.indexOf('[[Alpha')))).toEqual([
      'Alpha.md:0:0-0',
    ]);
    // A line without a link: no target, no locations.
    expect(spots(await ask('goToDefinition', 'Beta.md', 0))).toEqual([]);
  });

  it('references: every line linking to the note, the declaration included; columns in UTF-16 units', async () => {
    const gamma = NOTES['deep/Gamma.md']!.split('\n')[2]!;
    const at = gamma.indexOf('[[Alpha');
    const r = spots(
      await ask('findReferences', 'Beta.md', 2, NOTES['Beta.md']!.split('\n')[2]!.indexOf('[[Alpha')),
    );
    const beta = NOTES['Beta.md']!.split('\n')[2]!;
    expect(r).toEqual([
      'Alpha.md:0:0-0',
      `Beta.md:2:${beta.indexOf('[[Alpha')}-${beta.indexOf('[[Alpha') + '[[Alpha|the first]]'.length}`,
      `deep/Gamma.md:2:${at}-${at + '[[Alpha#top]]'.length}`,
    ]);
    // The emoji before it counts two units (JavaScript's own string index), not one code point.
    expect(at).toBe([...gamma.slice(0, at)].length + 1);
  });

  it('implementation: none, a legal answer', async () => {
    const r = await ask('goToImplementation', 'Alpha.md', 2);
    expect(r).toEqual({ kind: 'locations', locations: [], resolvedWorkspaceUri: pathToFileURL(root).href });
  });

  it('hover: the start of the note; null where there is no link or no such note', async () => {
    expect(await ask('hover', 'Alpha.md', 2)).toEqual({ kind: 'hover', content: NOTES['Beta.md']!.trim() });
    expect(await ask('hover', 'Alpha.md', 0)).toEqual({ kind: 'hover', content: null });
    writeFileSync(join(root, 'Orphan.md'), 'See [[Nowhere]].\n');
    expect(await ask('hover', 'Orphan.md', 0)).toEqual({ kind: 'hover', content: null });
    expect(spots(await ask('goToDefinition', 'Orphan.md', 0))).toEqual([]);
    rmSync(join(root, 'Orphan.md'));
  });

  it('resolves the root the caller gave (a symlink) and answers with the URI it resolved', async () => {
    const r = await ask('goToDefinition', join(link, 'Alpha.md'), 2, 0, link);
    expect(r).toMatchObject({ resolvedWorkspaceUri: pathToFileURL(root).href });
    expect(spots(r)).toEqual(['Beta.md:0:0-0']);
  });

  it('a missing root or file is NOT_FOUND', async () => {
    await expect(ask('hover', 'Alpha.md', 0, 0, join(root, 'nope'))).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
    await expect(ask('hover', 'Nope.md', 0)).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('finds [[name]], [[name|label]] and [[name#heading]] with their spans', () => {
    expect(linksIn('a [[X]] b [[Y|y]] [[Z#h]] [[ ]]', 4)).toEqual([
      { name: 'X', line: 4, start: 2, end: 7 },
      { name: 'Y', line: 4, start: 10, end: 17 },
      { name: 'Z', line: 4, start: 18, end: 25 },
    ]);
  });
});
