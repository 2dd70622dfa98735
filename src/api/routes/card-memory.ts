import type { FastifyInstance } from "fastify";
import { cardMemoryAnswerSchema, type CardMemoryAnswer } from "../../protocol/index.js";
import { cardMemoryView, type CardMemoryParts } from "../../services/index.js";

/** `GET /api/v1/card-memory`: where each card's memory goes, planned beside reported; reads only. */
export function registerCardMemoryRoutes(app: FastifyInstance, parts: CardMemoryParts): void {
  app.get(
    "/api/v1/card-memory",
    { config: { access: "read", api: { summary: "Each card's memory: the planner's share per replica (weights, KV cache, overhead), what the card reports used, and what other processes hold", response: cardMemoryAnswerSchema } } },
    async (): Promise<CardMemoryAnswer> => cardMemoryView(parts),
  );
}
