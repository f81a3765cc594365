/**
 * xterm.js creates `<style>` elements at run time (theme, dimensions). The page's CSP admits
 * style elements only with the nonce the relay put in this response (relay/web/web-assets.ts), so
 * every style element created through `document.createElement` gets it. Import this first.
 */
const nonce = document.querySelector<HTMLMetaElement>('meta[property="csp-nonce"]')?.nonce;
if (nonce) {
  const create = document.createElement.bind(document);
  document.createElement = ((tag: string, opts?: ElementCreationOptions) => {
    const el = create(tag, opts);
    if (tag.toLowerCase() === 'style') el.nonce = nonce;
    return el;
  }) as typeof document.createElement;
}

export {};
