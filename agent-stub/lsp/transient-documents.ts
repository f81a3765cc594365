import { readFile, stat } from 'node:fs/promises';
import type { MessageConnection } from 'vscode-jsonrpc/node';
import {
  DidCloseTextDocumentNotification,
  DidOpenTextDocumentNotification,
} from 'vscode-languageserver-protocol';
import { PtyRelayError } from '../../provider/errors.js';

/** Largest document opened for a query. */
export const MAX_DOCUMENT_BYTES = 8 * 1024 * 1024;

interface OpenDocument {
  users: number;
  /** Settles once `didOpen` went out (or failed). */
  opened: Promise<void>;
}

/**
 * Documents opened around queries and closed after them: the text comes from disk at the first
 * query that needs it and `didClose` goes out when the last query using it ends, so a server
 * never holds a stale copy between queries. Queries on one document at once share one open.
 */
export class TransientDocuments {
  private readonly open = new Map<string, OpenDocument>();
  private version = 0;

  constructor(private readonly connection: MessageConnection) {}

  /** Opens `uri` (read from `path`) for one more user; the returned function releases it. */
  async use(uri: string, path: string, languageId: string): Promise<() => void> {
    let doc = this.open.get(uri);
    if (!doc) {
      doc = { users: 0, opened: this.sendOpen(uri, path, languageId) };
      this.open.set(uri, doc);
    }
    doc.users++;
    const entry = doc;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      entry.users--;
      if (entry.users > 0 || this.open.get(uri) !== entry) return;
      this.open.delete(uri);
      entry.opened
        .then(() =>
          this.connection.sendNotification(DidCloseTextDocumentNotification.type, { textDocument: { uri } }),
        )
        .catch(() => {});
    };
    try {
      await entry.opened;
    } catch (err) {
      release();
      throw err;
    }
    return release;
  }

  private async sendOpen(uri: string, path: string, languageId: string): Promise<void> {
    const text = await readDocument(path);
    this.version++;
    await this.connection.sendNotification(DidOpenTextDocumentNotification.type, {
      textDocument: { uri, languageId, version: this.version, text },
    });
  }
}

async function readDocument(path: string): Promise<string> {
  try {
    const s = await stat(path);
    if (!s.isFile()) throw new PtyRelayError('INVALID_ARGUMENT', `${path} is not a file`, { filePath: path });
    if (s.size > MAX_DOCUMENT_BYTES)
      throw new PtyRelayError('INVALID_ARGUMENT', `${path} is larger than ${MAX_DOCUMENT_BYTES} bytes`, {
        filePath: path,
      });
    return await readFile(path, 'utf8');
  } catch (err) {
    if (err instanceof PtyRelayError) throw err;
    throw new PtyRelayError('NOT_FOUND', `cannot read ${path}: ${(err as Error).message}`, {
      filePath: path,
    });
  }
}
