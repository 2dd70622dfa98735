import type { z } from "zod";
import { DomainError } from "../../errors/light.js";

/** A JSON request body checked against its schema; the first problem is named by its field, with the fix for that route. */
export function parseJsonBody<Schema extends z.ZodType>(schema: Schema, raw: Buffer, hints: { readonly notJson: string; readonly notJsonHint: string; readonly fix: string }): z.infer<Schema> {
  let json: unknown;
  try {
    json = JSON.parse(raw.toString("utf8"));
  } catch {
    throw new DomainError("invalid_input", hints.notJson, hints.notJsonHint);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new DomainError("invalid_input", `${issue?.path.join(".") || "(top level)"}: ${issue?.message ?? "invalid"}`, hints.fix);
  }
  return parsed.data;
}
