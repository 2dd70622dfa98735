import type { FastifyError, FastifyInstance } from "fastify";
import { statusForCode } from "../protocol/http-status.js";
import { DomainError, isDomainError } from "../errors/domain-error.js";

export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError | DomainError | Error, request, reply) => {
    const domainError = toDomainError(error);
    if (domainError.code === "internal") request.log.error({ err: error }, "request failed");
    void reply.status(statusForCode[domainError.code]).send(domainError.toBody());
  });
  app.setNotFoundHandler((request, reply) => {
    const error = new DomainError(
      "route_not_found",
      `no API route at ${request.method} ${request.url.split("?")[0]}`,
      "See the README's admin API reference for the routes; a newer server may have this route.",
    );
    void reply.status(404).send(error.toBody());
  });
}

function toDomainError(error: FastifyError | DomainError | Error): DomainError {
  if (isDomainError(error)) return error;
  const status = (error as FastifyError).statusCode;
  if (status !== undefined && status >= 400 && status < 500) {
    // Fastify's own refusals (a body that is not JSON, a wrong content type, a body too large).
    return new DomainError("invalid_input", `request: ${error.message}`, "Send a JSON body with content-type: application/json.");
  }
  return new DomainError("internal", "the server failed while handling this request", "The server log has the details; retry, and report it if it persists.");
}
