import type { IncomingMessage, Server, ServerOptions, ServerResponse } from "node:http";
import { createServer } from "node:https";
import { watchTlsFiles, type TlsFiles } from "./tls-files.js";

export interface CertificateLog {
  renewed(file: string): void;
  failed(message: string): void;
}

/**
 * Node's HTTPS server on a checked certificate, which serves a renewed
 * certificate to new connections once its files change (watchTlsFiles) and
 * stops watching when it closes.
 */
export function createRenewingHttpsServer(
  tls: TlsFiles,
  options: ServerOptions,
  handler: (request: IncomingMessage, response: ServerResponse) => void,
  log: CertificateLog,
): Server {
  const server = createServer({ ...options, cert: tls.cert, key: tls.key }, handler);
  const watch = watchTlsFiles(server, tls, log);
  server.once("close", () => watch.stop());
  return server;
}

/**
 * A fastify `serverFactory` for an app served over HTTPS when `tls` is given
 * (the agent's control API): fastify's own `https` option cannot swap the
 * certificate, and typing the app as an HTTPS one would split every route
 * registration in two.
 */
export function httpsServerFactory(tls: TlsFiles, log: CertificateLog): (handler: (request: IncomingMessage, response: ServerResponse) => void, settings: { readonly http?: ServerOptions | null }) => Server {
  return (handler, settings) => createRenewingHttpsServer(tls, settings.http ?? {}, handler, log);
}
