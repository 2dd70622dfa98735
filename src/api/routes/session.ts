import type { FastifyInstance } from "fastify";
import { sessionViewSchema, type SessionView } from "../../protocol/index.js";
import { requireActor } from "../access.js";

/** Who the bearer token is, so a client (the console) can disable changes a read-only token would be refused. */
export function registerSessionRoutes(app: FastifyInstance): void {
  app.get("/api/v1/session", { config: { access: "read", api: { summary: "The bearer token in use: its name and role (admin or read)", response: sessionViewSchema } } }, async (request): Promise<SessionView> => {
    const actor = requireActor(request);
    return { token: { name: actor.token, role: request.audience } };
  });
}
