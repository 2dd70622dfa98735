import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { tokenNameSchema, type TokenService } from "../../services/token-service.js";
import { requireActor } from "../access.js";
import { parseBody } from "../parse-body.js";

const createBody = z.strictObject({
  name: tokenNameSchema,
  role: z.enum(["admin", "read"], { message: "admin (may change things) or read (may only read)" }).default("read"),
});
const nameParams = z.object({ name: z.string() });

/** Admin-API tokens: admin only, since a token is a key to everything its role allows. */
export function registerTokenRoutes(app: FastifyInstance, tokens: TokenService): void {
  app.get("/api/v1/tokens", { config: { access: "admin" } }, async () => ({ tokens: await tokens.list() }));

  app.post("/api/v1/tokens", { config: { access: "admin" } }, async (request, reply) => {
    const body = parseBody(createBody, request.body);
    return reply.status(201).send(await tokens.create(body.name, body.role, requireActor(request)));
  });

  app.delete("/api/v1/tokens/:name", { config: { access: "admin" } }, async (request) => {
    const { name } = nameParams.parse(request.params);
    await tokens.revoke(name, requireActor(request));
    return { revoked: name };
  });
}
