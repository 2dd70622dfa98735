import { z } from "zod";
import type { ErrorDetail } from "../errors/index.js";

// Lenient on what comes back: a peer of a newer release may send
// codes and fields this build does not know; keep what we read.
const errorBodySchema = z.object({
  error: z.object({
    code: z.string().optional(),
    message: z.string(),
    hint: z.string().optional(),
    details: z.array(z.object({ where: z.string(), message: z.string() })).optional(),
  }),
});

export interface ErrorBodyParts {
  readonly code: string | undefined;
  readonly message: string;
  readonly hint: string | undefined;
  readonly details: readonly ErrorDetail[];
}

/**
 * The error body every llmgw HTTP answer uses (DomainError.toBody), read back
 * from its text by the CLI, the server calling an agent and an agent calling
 * the server. Undefined when the text is not such a body (a proxy's page).
 */
export function readErrorBody(text: string): ErrorBodyParts | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  const body = errorBodySchema.safeParse(parsed);
  if (!body.success) return undefined;
  const { code, message, hint, details } = body.data.error;
  return { code, message, hint, details: details ?? [] };
}
