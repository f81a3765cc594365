/**
 * zod's English messages for the relay's schemas. `zod/mini` carries no messages of its own (an
 * issue would read "Invalid input"); classic `zod` sets English when it loads, but the relay loads
 * classic only with the MCP server. Imported for its effect by the modules whose schemas' own
 * messages reach users (config, RPC parameters); one global setting, as classic's.
 */
import * as z from 'zod/mini';
import en from 'zod/v4/locales/en.js';

z.config(en());
