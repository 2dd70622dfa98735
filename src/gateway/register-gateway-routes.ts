import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Gateway, GatewayEndpoint } from "./gateway.js";
import { openAIErrorAnswer } from "./openai-error-body.js";
import { DomainError } from "../errors/domain-error.js";
import { GatewayRefusal } from "./gateway-policy.js";

const endpoints: readonly GatewayEndpoint[] = ["chat/completions", "completions", "embeddings"];

/** Bodies OpenAI's API takes are small; long contexts of a million tokens are a few MB. */
const gatewayBodyLimit = 32 * 1024 * 1024;

/**
 * Mounts the OpenAI-compatible API at /v1, and the gateway's Prometheus
 * metrics at /metrics, on a fastify app: the server's own (beside the admin
 * API, which keeps its own tokens: `access: public` here means the gateway
 * policy, not an admin token, decides) or a standalone gateway's.
 *
 * Bodies are read as bytes and sent on as they are; the gateway parses them
 * once for what routing needs. Every answer, errors included, is in OpenAI's
 * error shape and carries x-request-id.
 */
export function registerGatewayRoutes(app: FastifyInstance, gateway: Gateway): void {
  void app.register(
    async (scope) => {
      scope.removeAllContentTypeParsers();
      scope.addContentTypeParser("*", { parseAs: "buffer", bodyLimit: gatewayBodyLimit }, (_request, body, done) => done(null, body));
      const fail = (request: FastifyRequest, reply: FastifyReply, error: unknown) => {
        const answer = openAIErrorAnswer(error, request.id);
        if (answer.retryAfterSeconds !== undefined) void reply.header("retry-after", String(answer.retryAfterSeconds));
        return reply.code(answer.status).header("x-request-id", request.id).send(answer.body);
      };
      scope.setErrorHandler((error: Error & { statusCode?: number }, request, reply) => {
        // Fastify's own refusals (a body too large, a wrong content type) and the admin hooks' (a bad version header) keep their status.
        if (!(error instanceof DomainError) && !(error instanceof GatewayRefusal) && error.statusCode !== undefined && error.statusCode < 500) {
          return reply
            .code(error.statusCode)
            .header("x-request-id", request.id)
            .send({ error: { message: error.message, type: "invalid_request_error", param: null, code: "invalid_input" } });
        }
        return fail(request, reply, error);
      });
      scope.setNotFoundHandler((request, reply) =>
        reply
          .code(404)
          .header("x-request-id", request.id)
          .send({
            error: {
              message: `no OpenAI route at ${request.method} ${request.url.split("?")[0]} here; this gateway serves GET /v1/models and POST /v1/chat/completions, /v1/completions, /v1/embeddings`,
              type: "invalid_request_error",
              param: null,
              code: "route_not_found",
            },
          }),
      );
      scope.get("/models", { config: { access: "public" } }, async (request, reply) => {
        try {
          return reply.header("x-request-id", request.id).send(gateway.listModels(request.headers.authorization));
        } catch (error) {
          return fail(request, reply, error);
        }
      });
      for (const endpoint of endpoints) {
        scope.post(`/${endpoint}`, { config: { access: "public" } }, async (request, reply) => {
          reply.hijack();
          await gateway.handle(endpoint, {
            id: request.id,
            headers: request.headers,
            body: Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0),
            response: reply.raw,
            log: request.log,
          });
        });
      }
    },
    { prefix: "/v1" },
  );
  // Closing: queued requests are answered at once, those being answered finish, then the pools close.
  let gatewayClosed: Promise<void> | undefined;
  app.addHook("preClose", async () => {
    gatewayClosed = gateway.close();
  });
  app.addHook("onClose", async () => {
    await gatewayClosed;
  });
  app.get("/metrics", { config: { access: "public" } }, async (_request, reply) => {
    const text = await gateway.metrics.registry.metrics();
    return reply.type(gateway.metrics.registry.contentType).send(text);
  });
}
