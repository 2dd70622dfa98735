import type { FastifyError, FastifyInstance } from "fastify";
import { statusForCode } from "../protocol/http-status.js";
import { DomainError, isDomainError } from "../errors/domain-error.js";

export interface ErrorHandlingOptions {
  /** Who answers, put before messages the framework makes ("agent gpu-1"); the admin API leaves it out. */
  readonly speaker?: string;
  /** Where the routes are listed, told to a caller who asked for one that does not exist. */
  readonly routesHint: string;
  /** Where a caller looks when the server failed on its own. */
  readonly logHint: string;
}

const adminApiErrors: ErrorHandlingOptions = {
  routesHint: "See the README's admin API reference for the routes; a newer server may have this route.",
  logHint: "The server log has the details; retry, and report it if it persists.",
};

/**
 * One mapping from errors to HTTP for every llmgw server (admin API and the
 * agent's control API): each answers the same `{error:{code,message,hint}}`
 * body with the status from the one table, so a client reads both alike.
 */
export function installErrorHandling(app: FastifyInstance, options: ErrorHandlingOptions = adminApiErrors): void {
  const prefix = options.speaker === undefined ? "" : `${options.speaker}: `;
  app.setErrorHandler((error: FastifyError | DomainError | Error, request, reply) => {
    const domainError = toDomainError(error, prefix, options.logHint);
    if (domainError.code === "internal") request.log.error({ err: error }, "request failed");
    void reply.status(statusForCode[domainError.code]).send(domainError.toBody());
  });
  app.setNotFoundHandler((request, reply) => {
    const where = options.speaker === undefined ? "no API route" : `${options.speaker} has no route`;
    const error = new DomainError("route_not_found", `${where} at ${request.method} ${request.url.split("?")[0]}`, options.routesHint);
    void reply.status(404).send(error.toBody());
  });
}

function toDomainError(error: FastifyError | DomainError | Error, prefix: string, logHint: string): DomainError {
  if (isDomainError(error)) return error;
  const status = (error as FastifyError).statusCode;
  if (status !== undefined && status >= 400 && status < 500) {
    // Fastify's own refusals (a body that is not JSON, a wrong content type, a body too large).
    return new DomainError("invalid_input", `${prefix}request: ${error.message}`, "Send a JSON body with content-type: application/json.");
  }
  return new DomainError("internal", `${prefix === "" ? "the server " : prefix}failed while handling this request`, logHint);
}
