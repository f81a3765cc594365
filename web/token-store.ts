/** Where the page keeps the relay token for this tab (gone when the tab closes). */
const KEY = 'ptyrelay.token';

/**
 * The token from a `#token=…` fragment (then removed from the address bar and history, so it
 * is neither bookmarked nor shown) or from session storage. Fragments never reach the server.
 */
export function takeToken(): string | undefined {
  const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (m) {
    const token = decodeURIComponent(m[1]!);
    sessionStorage.setItem(KEY, token);
    history.replaceState(null, '', location.pathname + location.search);
    return token;
  }
  return sessionStorage.getItem(KEY) ?? undefined;
}

export function saveToken(token: string): void {
  sessionStorage.setItem(KEY, token);
}

export function forgetToken(): void {
  sessionStorage.removeItem(KEY);
}
