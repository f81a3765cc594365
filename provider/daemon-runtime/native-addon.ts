import { existsSync } from 'node:fs';

/**
 * Loads an optional Node-API addon that `npm run build` compiles with the system C compiler
 * (scripts/build-native.mjs) and the relay ships beside the stub bundle (today only malloc-trim).
 * `problem` says why there is none: `missing` when the file is absent, else that it
 * did not load or lacks one of `functions`.
 */
export function loadNativeAddon<T>(
  path: string | undefined,
  functions: readonly string[],
  missing: string,
): { addon?: T; problem?: string } {
  if (!path || !existsSync(path)) return { problem: missing };
  const mod = { exports: {} as Record<string, unknown> };
  try {
    process.dlopen(mod, path);
  } catch (err) {
    return { problem: `${path} did not load: ${(err as Error).message}` };
  }
  return functions.every((f) => typeof mod.exports[f] === 'function')
    ? { addon: mod.exports as T }
    : { problem: `${path} has no ${functions.map((f) => `${f}()`).join(' and ')}` };
}
