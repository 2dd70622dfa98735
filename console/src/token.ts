/**
 * The admin-API token lives in this tab's session storage: it survives a
 * reload, not the tab. A login link carries it in the URL fragment, which
 * browsers never send to a server; it is moved here and cleared from the
 * address bar before anything else runs.
 */
const storageKey = "llmgw.token";

export function takeTokenFromFragment(): void {
  const match = /(?:^#|&)token=([^&]+)/.exec(window.location.hash);
  if (!match?.[1]) return;
  sessionStorage.setItem(storageKey, decodeURIComponent(match[1]));
  const rest = window.location.hash.replace(/(^#|&)token=[^&]+/, "").replace(/^#&?/, "");
  window.history.replaceState(null, "", `${window.location.pathname}${window.location.search}${rest ? `#${rest}` : ""}`);
}

export function currentToken(): string | null {
  return sessionStorage.getItem(storageKey);
}

export function setToken(token: string | null): void {
  if (token) sessionStorage.setItem(storageKey, token);
  else sessionStorage.removeItem(storageKey);
}
