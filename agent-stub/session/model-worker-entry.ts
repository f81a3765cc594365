import { workerData } from 'node:worker_threads';
import { heapTrimAddon } from '../native/heap-trim.js';
import type { ModelWorkerData } from './model-protocol.js';
import { runModelWorker } from './model-worker.js';

/**
 * Entry of the model worker's own bundle (scripts/bundle-stub.mjs): the headless terminal and
 * the model code, not the daemon's. The stub bundle carries it as source and starts it with
 * `eval` (screen-model.ts), so a host still receives one file.
 */
const data = workerData as ModelWorkerData | undefined;
// An eval'd worker has no file of its own: the addon's path comes from the daemon.
if (data?.heapTrimPath) heapTrimAddon(data.heapTrimPath);
runModelWorker();
