import type { FastifyReply } from "fastify";
import type { BodyRefusalWords } from "../openai-server/body-route.js";
import { errorBody } from "../openai-server/openai-error-body.js";

/** Thrown while a request is being served; answered in llama-server's (and OpenAI's) error shape. */
export class RequestFailed extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    /** The request field at fault, as OpenAI names it in `error.param`. */
    readonly param: string | null = null,
  ) {
    super(message);
  }
}

/** A refused body in llama-server's words. */
export const llamaBodyRefusal: BodyRefusalWords = { type: "invalid_request_error", bodyName: "request body" };

/** A request the engine cannot honour: a 400 that names the field, never a 200 that ignores it. */
export function unsupported(param: string, message: string): RequestFailed {
  return new RequestFailed(400, "invalid_request_error", message, param);
}

/** Any failure as the RequestFailed it is answered with: anything unforeseen is a 500 that says what broke. */
export function asRequestFailed(error: unknown): RequestFailed {
  return error instanceof RequestFailed ? error : new RequestFailed(500, "server_error", error instanceof Error ? error.message : String(error));
}

export function failureBody(failure: RequestFailed) {
  return errorBody(failure.status, failure.type, failure.message, failure.param);
}

export function sendFailure(reply: FastifyReply, error: unknown): FastifyReply {
  const failure = asRequestFailed(error);
  return reply.code(failure.status === 499 ? 400 : failure.status).send(failureBody(failure));
}
