/** Writes the stub to `outfile` (and its worker's bundle beside it); `banner` runs first. */
export function bundleStub(opts: { outfile: string; banner?: string }): Promise<void>;
