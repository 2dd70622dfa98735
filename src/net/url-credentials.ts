/**
 * A mirror URL may carry its login (`https://robot:secret@mirror/models/`).
 * Node's fetch refuses such URLs outright and undici's request ignores the
 * credentials, so the login never reaches the mirror: every request goes out
 * with the user-info moved into an Authorization: Basic header instead.
 */
export function withUrlCredentials(url: string, headers: Readonly<Record<string, string>> = {}): { url: string; headers: Record<string, string> } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { url, headers: { ...headers } };
  }
  if (parsed.username === "" && parsed.password === "") return { url, headers: { ...headers } };
  const login = `${decodeURIComponent(parsed.username)}:${decodeURIComponent(parsed.password)}`;
  parsed.username = "";
  parsed.password = "";
  // A header given by the caller (a hub token) wins over the URL's login.
  const hasAuthorization = Object.keys(headers).some((name) => name.toLowerCase() === "authorization");
  return {
    url: parsed.toString(),
    headers: hasAuthorization ? { ...headers } : { ...headers, authorization: `Basic ${Buffer.from(login).toString("base64")}` },
  };
}
