import { isPtyRelayError } from '../../provider/errors.js';

/** The code, message and details of the PtyRelayError `p` rejects with ('no error' when it resolves). */
export async function codeOf(
  p: Promise<unknown>,
): Promise<{ code: string; message: string; details?: unknown }> {
  try {
    await p;
  } catch (err) {
    if (isPtyRelayError(err)) return { code: err.code, message: err.message, details: err.details };
    throw err;
  }
  return { code: 'no error', message: '' };
}
