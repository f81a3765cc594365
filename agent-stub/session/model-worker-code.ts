import { join } from 'node:path';

/** The model worker's code: its bundle as a file, or as source (tests). */
export type ModelWorkerCode = { source: string } | { file: string };

/**
 * Replaced by the worker bundle's file name when scripts/lib/stub-bundle.mjs builds the stub: the
 * worker ships beside stub.cjs as a part of its own, so no daemon holds its source.
 */
declare const __PTYRELAY_MODEL_WORKER__: string | undefined;

/** The worker bundle beside the stub bundle (a daemon started from anything else has none). */
export function bundledModelWorker(): ModelWorkerCode {
  if (typeof __PTYRELAY_MODEL_WORKER__ === 'string')
    return { file: join(__dirname, __PTYRELAY_MODEL_WORKER__) };
  throw new Error('no model worker bundle: the daemon runs from the stub bundle (npm run build)');
}
