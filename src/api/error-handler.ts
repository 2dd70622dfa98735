import type { FastifyError, FastifyInstance } from "fastify";
import type { ErrorCode } from "../errors/codes.js";
import { DomainError, isDomainError } from "../errors/domain-error.js";

/**
 * The one place domain errors become HTTP (STYLE 1). A Record over every code
 * makes the compiler refuse a new code that has no status yet.
 */
export const statusForCode: Record<ErrorCode, number> = {
  invalid_yaml: 400,
  invalid_input: 400,
  unknown_key: 400,
  name_taken: 409,
  unknown_fallback: 400,
  fallback_cycle: 400,
  unknown_engine: 400,
  invalid_profile: 400,
  context_too_long: 400,
  model_not_found: 404,
  model_in_use: 409,
  declared_in_file: 409,
  profile_not_found: 404,
  unauthorized: 401,
  token_not_found: 404,
  last_admin_token: 409,
  forbidden: 403,
  version_unsupported: 426,
  route_not_found: 404,
  server_unreachable: 502,
  config_invalid: 400,
  join_refused: 401,
  source_unavailable: 502,
  checksum_mismatch: 502,
  engine_missing: 409,
  engine_failed: 502,
  port_taken: 409,
  cards_busy: 409,
  replica_not_found: 404,
  replica_conflict: 409,
  node_not_found: 404,
  agent_unreachable: 502,
  internal: 500,
  does_not_fit: 422,
  architecture_field_missing: 422,
  // One status for every unreadable source (a missing local file, a 404 on the
  // mirror, a hub outage): the message says which file failed and why.
  source_unreadable: 422,
  weights_metadata_missing: 422,
};

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
