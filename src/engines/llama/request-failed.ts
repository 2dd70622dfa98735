import type { FastifyReply } from "fastify";

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

/** A request the engine cannot honour: a 400 that names the field, never a 200 that ignores it. */
export function unsupported(param: string, message: string): RequestFailed {
  return new RequestFailed(400, "invalid_request_error", message, param);
}

export function errorBody(status: number, type: string, message: string, param: string | null = null) {
  return { error: { code: status, message, type, ...(param !== null ? { param } : {}) } };
}

export function sendFailure(reply: FastifyReply, error: unknown): FastifyReply {
  const failure = error instanceof RequestFailed ? error : new RequestFailed(500, "server_error", error instanceof Error ? error.message : String(error));
  return reply.code(failure.status === 499 ? 400 : failure.status).send(errorBody(failure.status, failure.type, failure.message, failure.param));
}
