/** Made once per process: ids stay unique across gateways and workers without randomness per request. */
const idPrefix = `req-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}-`;
let made = 0;

/** x-request-id as the client sent it, when it is a sane id; otherwise a new one. Logs and answers carry it. */
export function requestIdFrom(header: string | string[] | undefined): string {
  const given = Array.isArray(header) ? header[0] : header;
  if (given !== undefined && /^[A-Za-z0-9._:-]{1,128}$/.test(given)) return given;
  made += 1;
  return idPrefix + made.toString(36);
}
