import type { FastifyReply } from "fastify";
import { errorBody } from "../openai-server/openai-error-body.js";
import { sleepUntil } from "./sim-clock.js";
import type { GangHealth } from "./rendezvous.js";

/**
 * How a leader whose gang broke fails what it serves, as vLLM does when its
 * engine core dies under a request: a request not yet answered gets a 500 in
 * OpenAI's error shape; a stream already under way gets one error event (an
 * `error` event for the Responses API, a data line with `error` for chat and
 * completions, then their [DONE]) and ends, so clients see a failure and not
 * a short answer.
 */

export const gangBrokenMessage = (gang: GangHealth) => `the engine's collective operation failed: ${gang.trouble ?? "a member of the gang was lost"}`;

/** Waits until `deadline` (performance.now() time), or until the gang breaks, whichever is first. */
export async function sleepUntilOrBroken(deadline: number, gang: GangHealth | undefined): Promise<void> {
  if (gang === undefined) return sleepUntil(deadline);
  if (gang.broken.aborted) return;
  let onAbort: () => void = () => undefined;
  const broken = new Promise<void>((resolve) => {
    onAbort = resolve;
    gang.broken.addEventListener("abort", onAbort, { once: true });
  });
  try {
    await Promise.race([sleepUntil(deadline), broken]);
  } finally {
    gang.broken.removeEventListener("abort", onAbort);
  }
}

/** Ends a stream under way with the error event its route's clients read. */
export function failStream(raw: FastifyReply["raw"], send: (payload: unknown, event?: string) => void, gang: GangHealth, doneLine: boolean): void {
  const message = gangBrokenMessage(gang);
  if (doneLine) send(errorBody(500, "InternalServerError", message));
  else send({ type: "error", code: "server_error", message, param: null }, "error");
  raw.end(doneLine ? "data: [DONE]\n\n" : undefined);
}

/** Answers a request not yet answered with a 500. */
export async function failWhole(reply: FastifyReply, gang: GangHealth): Promise<void> {
  await reply.code(500).send(errorBody(500, "InternalServerError", gangBrokenMessage(gang)));
}

/** The 503 answer (health and new requests) while the gang is not whole. */
export function gangUnavailable(trouble: string): ReturnType<typeof errorBody> {
  return errorBody(503, "ServiceUnavailableError", `the simulated engine is not serving: ${trouble}`);
}
