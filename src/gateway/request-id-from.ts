/** x-request-id as the client sent it, when it is a sane id; otherwise a new one. Logs and answers carry it. */
export function requestIdFrom(header: string | string[] | undefined): string {
  const given = Array.isArray(header) ? header[0] : header;
  if (given !== undefined && /^[A-Za-z0-9._:-]{1,128}$/.test(given)) return given;
  return `req-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
}
