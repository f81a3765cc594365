import type * as NodeHttp from 'node:http';
import { createRequire } from 'node:module';

/**
 * `node:http`, loaded with `require`. An ES `import` of it builds the module's namespace from
 * every export, which reads its lazy getters (`WebSocket`, `CloseEvent`, `MessageEvent`) and so
 * loads undici, http2, zlib and perf_hooks that the relay never uses: 13 MB more RSS in a fresh
 * process on Node 24 (10 on 22, 15 on 26). Import `http` from here, types from `node:http`.
 */
export const http: typeof NodeHttp = createRequire(import.meta.url)('node:http');
