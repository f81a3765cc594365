// Bundles the agent stub into dist/stub/stub.cjs (see lib/stub-bundle.mjs).
import { bundleStub } from './lib/stub-bundle.mjs';

await bundleStub({ outfile: 'dist/stub/stub.cjs' });
