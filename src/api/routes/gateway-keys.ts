import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { GatewayKeyService } from "../../services/gateway-key-service.js";
import { tokenNameSchema } from "../../services/token-service.js";
import { requireActor } from "../access.js";
import { parseBody } from "../parse-body.js";

const perMinute = (what: string) => z.number().int().positive({ message: `${what} per minute, a whole number of at least 1 (leave it out for no limit)` });

const createBody = z.strictObject({
  name: tokenNameSchema,
  models: z.array(z.string().min(1)).min(1, { message: "at least one model, alias or adapter name (leave models out to allow every one)" }).optional(),
  rpm: perMinute("requests").optional(),
  tpm: perMinute("tokens").optional(),
  expires: z.string().optional(),
});
const nameParams = z.object({ name: z.string() });

/** Gateway keys: admin only, like admin-API tokens, since a key spends the organisation's capacity. */
export function registerGatewayKeyRoutes(app: FastifyInstance, keys: GatewayKeyService): void {
  app.get("/api/v1/keys", { config: { access: "admin" } }, async () => ({ keys: await keys.list() }));

  app.post("/api/v1/keys", { config: { access: "admin" } }, async (request, reply) => {
    const body = parseBody(createBody, request.body);
    return reply.status(201).send(await keys.create(body, requireActor(request)));
  });

  app.delete("/api/v1/keys/:name", { config: { access: "admin" } }, async (request) => {
    const { name } = nameParams.parse(request.params);
    return keys.revoke(name, requireActor(request));
  });
}
