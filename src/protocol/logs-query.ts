import { z } from "zod";

/**
 * The query of a replica's log and of a stop, as the admin API takes it and
 * passes it on to the agent's control API: one definition, so the two cannot
 * come to disagree about what `follow=true` or `tail=0` means.
 */
export const flagSchema = z.enum(["0", "1", "true", "false"]).optional();

export function isSet(flag: z.infer<typeof flagSchema>): boolean {
  return flag === "1" || flag === "true";
}

export const logsQuerySchema = z.object({
  tail: z.coerce.number().int().min(0).max(100_000).default(100),
  follow: flagSchema,
});
