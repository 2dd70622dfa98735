import type { z } from "zod";
import { DomainError } from "../../errors/light.js";

/** A body the translation cannot read, as invalid_input naming the first field at fault and the API whose shape it takes. */
export function bodyRefusal(at: string, problem: string, api: string): DomainError {
  return new DomainError("invalid_input", `body ${at}: ${problem}`, `Send the body ${api} documents.`, [{ where: at, message: problem }]);
}

/** The first issue of a failed parse as a refusal. */
export function refusalFromZod(error: z.ZodError, api: string): DomainError {
  const issue = deepest(error.issues[0], []);
  const at = issue === undefined || issue.path.length === 0 ? "body" : issue.path.map(String).join(".");
  return bodyRefusal(at, issue?.message ?? "not readable", api);
}

/**
 * A union's failure says only "invalid input" where it failed; the branch
 * that got furthest into the value says what is wrong inside it (a content
 * block of an unknown type, rather than "content: invalid input").
 */
function deepest(issue: z.core.$ZodIssue | undefined, base: readonly PropertyKey[]): { path: PropertyKey[]; message: string } | undefined {
  if (issue === undefined) return undefined;
  const path = [...base, ...issue.path];
  if (issue.code !== "invalid_union" || issue.errors.length === 0) return { path, message: issue.message };
  let best: { path: PropertyKey[]; message: string } | undefined;
  for (const branch of issue.errors) {
    const found = deepest(branch[0], path);
    if (found !== undefined && (best === undefined || found.path.length > best.path.length)) best = found;
  }
  return best !== undefined && best.path.length > path.length ? best : { path, message: issue.message };
}

/** The request's JSON, or invalid_input when it is none. */
export function parseJsonBody(raw: Buffer, api: string): unknown {
  try {
    return JSON.parse(raw.toString("utf8"));
  } catch {
    throw new DomainError("invalid_input", "the request body is not JSON", `Send a JSON body, as ${api} takes it, with content-type: application/json.`);
  }
}
