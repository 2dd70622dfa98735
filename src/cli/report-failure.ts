import type { RemoteError } from "../client/index.js";
import type { DomainError } from "../errors/index.js";

/**
 * A refusal as the person at the terminal reads it: what happened, each
 * place with its reason, then what to do. Every detail is printed (the
 * reason is often only there, a URL and "could not connect"); a detail the
 * message already states in full is not said twice.
 */
export function describeFailure(error: DomainError | RemoteError): string {
  const lines = [`error: ${error.message}`];
  for (const detail of error.details) {
    const stated = error.message.includes(`${detail.where}: ${detail.message}`) || (error.details.length === 1 && error.message.endsWith(detail.message));
    if (!stated) lines.push(`  - ${detail.where}: ${detail.message}`);
  }
  if (error.hint) lines.push(error.hint);
  return lines.join("\n");
}
