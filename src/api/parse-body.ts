import type { z } from "zod";
import { parseWithSchema } from "../catalog/index.js";

/** Validates a request body at the edge (strict on our input). */
export function parseBody<Schema extends z.ZodType>(schema: Schema, body: unknown): z.infer<Schema> {
  return parseWithSchema(schema, body ?? {}, { label: "request body" });
}

/** Validates a query string the same way, so its errors name "query" and the parameter. */
export function parseQuery<Schema extends z.ZodType>(schema: Schema, query: unknown): z.infer<Schema> {
  return parseWithSchema(schema, query, { label: "query" });
}
