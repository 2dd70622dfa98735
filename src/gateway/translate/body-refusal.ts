import type { z } from "zod";
import { DomainError } from "../../errors/domain-error.js";

/** A body the translation cannot read, as invalid_input naming the first field at fault and the API whose shape it takes. */
export function bodyRefusal(at: string, problem: string, api: string): DomainError {
  return new DomainError("invalid_input", `body ${at}: ${problem}`, `Send the body ${api} documents.`, [{ where: at, message: problem }]);
}

/** The first issue of a failed parse as a refusal. */
export function refusalFromZod(error: z.ZodError, api: string): DomainError {
  const issue = error.issues[0];
  const at = issue === undefined || issue.path.length === 0 ? "body" : issue.path.map(String).join(".");
  return bodyRefusal(at, issue?.message ?? "not readable", api);
}

/** The request's JSON, or invalid_input when it is none. */
export function parseJsonBody(raw: Buffer, api: string): unknown {
  try {
    return JSON.parse(raw.toString("utf8"));
  } catch {
    throw new DomainError("invalid_input", "the request body is not JSON", `Send a JSON body, as ${api} takes it, with content-type: application/json.`);
  }
}
