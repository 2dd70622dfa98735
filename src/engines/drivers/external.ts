import { z } from "zod";
import type { externalSchema } from "../../catalog/index.js";
import { ExternalKeyMissing } from "../../errors/for-engines.js";

export type ExternalModelConfig = z.infer<typeof externalSchema>;

/** Where the gateway sends a request for an external model, and how it authenticates. */
export interface ExternalUpstream {
  /** The provider's base URL without a trailing slash; paths such as /chat/completions are appended to it. */
  readonly baseUrl: string;
  /** The model name the provider knows, which may differ from ours. */
  readonly upstreamModel: string;
  /** Headers to add; the API key is here and must never be logged. */
  readonly headers: Readonly<Record<string, string>>;
}

/**
 * The external "driver": a model another provider serves. There is no process
 * to launch, no health path and no metrics; what remains is where to send the
 * request and with which key. The environment is passed in (the server's
 * process.env) so this stays pure and testable.
 *
 * A named key variable that is unset is an error rather than an anonymous
 * request: the provider's 401 would reach the client and hide the cause.
 */
export function externalUpstream(
  modelName: string,
  external: ExternalModelConfig,
  environment: Readonly<Record<string, string | undefined>>,
): ExternalUpstream {
  const headers: Record<string, string> = {};
  if (external.api_key_env !== undefined) {
    const key = environment[external.api_key_env];
    if (key === undefined || key === "") throw new ExternalKeyMissing(modelName, external.api_key_env);
    headers["authorization"] = `Bearer ${key}`;
  }
  return {
    baseUrl: external.base_url.replace(/\/+$/, ""),
    upstreamModel: external.model ?? modelName,
    headers,
  };
}
