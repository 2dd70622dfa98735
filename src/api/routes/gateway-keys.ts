import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { keyMaxInFlightSchema } from "../../catalog/index.js";
import type { GatewayKeyState } from "../../protocol/index.js";
import { type GatewayKeyService, tokenNameSchema } from "../../services/index.js";
import { requireActor } from "../access.js";
import { parseBody, parseQuery } from "../parse-body.js";
import { matchesText, pageQueryShape } from "../lists/list-query.js";
import { sendItems } from "../lists/list-answer.js";

const keyStates = ["active", "expired", "revoked"] as const satisfies readonly GatewayKeyState[];
const keysQuery = z.strictObject({
  ...pageQueryShape,
  state: z.enum(keyStates, { message: `one of ${keyStates.join(", ")}` }).optional(),
  model: z.string().min(1).optional(),
});

const perMinute = (what: string) => z.number().int().positive({ message: `${what} per minute, a whole number of at least 1 (leave it out for no limit)` });

const createBody = z.strictObject({
  name: tokenNameSchema,
  models: z.array(z.string().min(1)).min(1, { message: "at least one model, alias or adapter name (leave models out to allow every one)" }).optional(),
  rpm: perMinute("requests").optional(),
  tpm: perMinute("tokens").optional(),
  max_in_flight: keyMaxInFlightSchema.optional(),
  expires: z.string().optional(),
});
const nameParams = z.object({ name: z.string() });

/** Gateway keys: admin only, like admin-API tokens, since a key spends the organisation's capacity. */
export function registerGatewayKeyRoutes(app: FastifyInstance, keys: GatewayKeyService): void {
  app.get("/api/v1/keys", { config: { access: "admin", api: { summary: "Gateway keys (never a key itself), filtered and paged", query: keysQuery } } }, async (request, reply) => {
    const query = parseQuery(keysQuery, request.query);
    const matching = (await keys.list()).filter(
      (key) =>
        (query.state === undefined || key.state === query.state) &&
        // A key of no scope may use every model.
        (query.model === undefined || key.models === null || key.models.includes(query.model)) &&
        matchesText(query.q, [key.name, ...(key.models ?? [])]),
    );
    return sendItems(request, reply, { field: "keys", items: matching, key: (key) => key.name, query });
  });

  app.post("/api/v1/keys", { config: { access: "admin", dryRun: true, api: { summary: "Make a gateway key; the answer is the only time it is shown", body: createBody, status: 201 } } }, async (request, reply) => {
    const body = parseBody(createBody, request.body);
    if (request.dryRun) return keys.previewCreate(body);
    return reply.status(201).send(await keys.create(body, requireActor(request)));
  });

  app.delete("/api/v1/keys/:name", { config: { access: "admin", dryRun: true, api: { summary: "Revoke a gateway key" } } }, async (request) => {
    const { name } = nameParams.parse(request.params);
    if (request.dryRun) return keys.previewRevoke(name);
    return keys.revoke(name, requireActor(request));
  });
}
