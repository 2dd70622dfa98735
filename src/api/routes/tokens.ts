import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { tokenNameSchema, type TokenService } from "../../services/index.js";
import { requireActor } from "../access.js";
import { parseBody } from "../parse-body.js";

const createBody = z.strictObject({
  name: tokenNameSchema,
  role: z.enum(["admin", "read"], { message: "admin (may change things) or read (may only read)" }).default("read"),
});
const nameParams = z.object({ name: z.string() });

/** Admin-API tokens: admin only, since a token is a key to everything its role allows. */
export function registerTokenRoutes(app: FastifyInstance, tokens: TokenService): void {
  app.get("/api/v1/tokens", { config: { access: "admin", api: { summary: "Admin-API tokens (never a token itself)" } } }, async () => ({ tokens: await tokens.list() }));

  app.post("/api/v1/tokens", { config: { access: "admin", dryRun: true, api: { summary: "Make an admin-API token; the answer is the only time it is shown", body: createBody, status: 201 } } }, async (request, reply) => {
    const body = parseBody(createBody, request.body);
    if (request.dryRun) return tokens.previewCreate(body.name, body.role);
    return reply.status(201).send(await tokens.create(body.name, body.role, requireActor(request)));
  });

  app.delete("/api/v1/tokens/:name", { config: { access: "admin", dryRun: true, api: { summary: "Revoke an admin-API token" } } }, async (request) => {
    const { name } = nameParams.parse(request.params);
    if (request.dryRun) return tokens.previewRevoke(name);
    await tokens.revoke(name, requireActor(request));
    return { revoked: name };
  });
}
