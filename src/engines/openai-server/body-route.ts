import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { z } from "zod";
import { describeIssues } from "../../catalog/schema-errors.js";
import { errorBody, paramOfIssues } from "./openai-error-body.js";

/** How an engine words a body its schema refuses, as the engine it answers as does. */
export interface BodyRefusalWords {
  /** The error type of the 400 (vLLM's "BadRequestError", llama-server's "invalid_request_error"). */
  readonly type: string;
  /** What the message calls the body ("body", "request body"). */
  readonly bodyName: string;
}

/**
 * A POST route whose JSON body is read with `schema` first: a body it
 * refuses is a 400 in OpenAI's shape naming the field at fault in `param`,
 * so every route refuses alike and the handler sees only a checked body.
 */
export function postWithBody<Schema extends z.ZodType>(
  server: FastifyInstance,
  path: string,
  schema: Schema,
  words: BodyRefusalWords,
  handle: (body: z.infer<Schema>, request: FastifyRequest, reply: FastifyReply) => Promise<unknown>,
): void {
  server.post(path, async (request, reply) => {
    const body = schema.safeParse(request.body);
    if (!body.success) return reply.code(400).send(errorBody(400, words.type, describeIssues(body.error.issues, words.bodyName), paramOfIssues(body.error.issues)));
    return handle(body.data, request, reply);
  });
}
