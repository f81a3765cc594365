/** The model worker's code: its bundle as source (in the stub bundle) or as a file (tests). */
export type ModelWorkerCode = { source: string } | { file: string };

/** Replaced by the worker bundle's source when scripts/bundle-stub.mjs builds the stub. */
declare const __PTYRELAY_MODEL_WORKER__: string | undefined;

/** The worker source the stub bundle carries (a daemon started from anything else has none). */
export function bundledModelWorker(): ModelWorkerCode {
  if (typeof __PTYRELAY_MODEL_WORKER__ === 'string') return { source: __PTYRELAY_MODEL_WORKER__ };
  throw new Error('no model worker source: the daemon runs from the stub bundle (npm run build)');
}
