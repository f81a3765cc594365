import { PtyRelayError } from '../../provider/errors.js';
import {
  extensionOf,
  type LspProvider,
  type LspQuery,
  type LspQueryResult,
  registrationProblem,
  resultKindOf,
} from '../../provider/lsp-seam.js';

interface Registered {
  provider: LspProvider;
  /** The provider's map as it was at registration (a later change moves nothing). */
  languages: Readonly<Record<string, string>>;
}

export interface LspQueryOptions {
  signal?: AbortSignal;
  /** Every query has a deadline: past it the query fails with TIMEOUT and its provider's signal fires. */
  timeoutMs: number;
}

/** An error a provider throws passes as is; anything else is its failure, with its message. */
function typed(err: unknown, provider: string): PtyRelayError {
  if (err instanceof PtyRelayError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new PtyRelayError('LSP_REQUEST_FAILED', `provider ${provider}: ${message}`, { provider });
}

/**
 * The seam's registry on the host: providers registered atomically (the id and every extension
 * checked and reserved together; a conflict publishes nothing; the disposer releases all of it),
 * and queries sent to the provider of the file's extension — per query, whatever the order of
 * registration. The language id comes from the provider's own map and goes to the provider only.
 */
export class LspRegistry {
  private readonly providers = new Map<string, Registered>();
  private readonly byExtension = new Map<string, string>();

  /** Registers `p`, or throws LSP_PROVIDER_CONFLICT having reserved nothing. */
  register(p: LspProvider): () => void {
    const problem = registrationProblem(p, {
      ids: new Set(this.providers.keys()),
      extensions: this.byExtension,
    });
    if (problem) throw new PtyRelayError('LSP_PROVIDER_CONFLICT', problem, { provider: String(p.id) });
    const languages = Object.freeze({ ...p.extensionToLanguage });
    const entry: Registered = { provider: p, languages };
    this.providers.set(p.id, entry);
    for (const ext of Object.keys(languages)) this.byExtension.set(ext, p.id);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (this.providers.get(p.id) === entry) this.providers.delete(p.id);
      for (const ext of Object.keys(languages))
        if (this.byExtension.get(ext) === p.id) this.byExtension.delete(ext);
    };
  }

  /** Registered provider ids, in no particular order. */
  ids(): string[] {
    return [...this.providers.keys()];
  }

  /** The provider of `filePath`'s extension and the language id it maps that extension to. */
  select(filePath: string): { provider: LspProvider; languageId: string } | undefined {
    const ext = extensionOf(filePath);
    const id = ext === undefined ? undefined : this.byExtension.get(ext);
    const entry = id === undefined ? undefined : this.providers.get(id);
    if (!entry || ext === undefined) return undefined;
    return { provider: entry.provider, languageId: entry.languages[ext]! };
  }

  /**
   * Runs `q` on its provider. Fails with LSP_NO_PROVIDER when no provider takes the file's
   * extension, TIMEOUT at the deadline, ABORTED when the caller's signal fires (the provider's
   * signal fires in both cases and the answer does not wait for it), LSP_REQUEST_FAILED when
   * the provider answers with the other operation's shape.
   */
  async query(q: LspQuery, opts: LspQueryOptions): Promise<LspQueryResult> {
    const chosen = this.select(q.filePath);
    if (!chosen) {
      const ext = extensionOf(q.filePath);
      const what = ext === undefined ? 'has no extension' : `has extension ${ext}`;
      throw new PtyRelayError('LSP_NO_PROVIDER', `no provider for ${q.filePath}: it ${what}`, {
        filePath: q.filePath,
        ...(ext !== undefined ? { extension: ext } : {}),
        providers: this.ids(),
      });
    }
    const { provider, languageId } = chosen;
    const ctl = new AbortController();
    const deadline = setTimeout(
      () =>
        ctl.abort(
          new PtyRelayError(
            'TIMEOUT',
            `provider ${provider.id} did not answer ${q.operation} within ${opts.timeoutMs} ms`,
            {
              provider: provider.id,
              timeoutMs: opts.timeoutMs,
            },
          ),
        ),
      opts.timeoutMs,
    );
    const onCallerAbort = () =>
      ctl.abort(new PtyRelayError('ABORTED', `${q.operation} was cancelled by its caller`));
    if (opts.signal?.aborted) onCallerAbort();
    opts.signal?.addEventListener('abort', onCallerAbort, { once: true });
    try {
      const result = await raceAbort(provider.query({ ...q, languageId }, ctl.signal), ctl.signal);
      if (result?.kind !== resultKindOf(q.operation))
        throw new PtyRelayError(
          'LSP_REQUEST_FAILED',
          `provider ${provider.id} answered ${q.operation} with the wrong shape`,
        );
      return result;
    } catch (err) {
      throw typed(err, provider.id);
    } finally {
      clearTimeout(deadline);
      opts.signal?.removeEventListener('abort', onCallerAbort);
    }
  }
}

/** `work`, or the signal's reason as soon as it fires (a provider that ignores its signal cannot hold a caller). */
export function raceAbort<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    work.catch(() => {});
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
