import { z } from "zod";

/**
 * `?dry_run=true` (or `1`) on a change route: the same checks run and a
 * refusal answers as the real call would, but nothing is written. Only these
 * two words mean yes; any other value is refused rather than guessed at, so a
 * typo never makes a real change.
 */
export const dryRunQuerySchema = z.strictObject({
  dry_run: z.enum(["true", "1"], { message: "true or 1 (leave it out for a real change)" }).optional(),
});

/** The query parameter's name, as the routes and the CLI send it. */
export const dryRunParameter = "dry_run";

/**
 * One thing a change would do, as the reconciler and the services decide it
 * on the would-be state. `kind` is noun-verb (replica-start, replica-stop,
 * replica-preempt, replica-restart, catalog-write, key-create, node-cordon);
 * `summary` is the sentence a person reads.
 */
export const changeSchema = z.object({
  kind: z.string(),
  summary: z.string(),
  model: z.string().optional(),
  replica: z.string().optional(),
  node: z.string().optional(),
  /** GPU indexes on the node. */
  cards: z.array(z.number().int()).optional(),
  engine_args: z.array(z.string()).optional(),
  kv_bytes_per_card: z.number().optional(),
  class: z.string().optional(),
});

export type Change = z.infer<typeof changeSchema>;

/**
 * The answer of an accepted dry run: `outcome` is the body the real call would
 * answer, as far as it is known without writing (ids and times that only a
 * write makes are left as they would be); `changes` is what would happen.
 */
export interface DryRunAnswer<Outcome = unknown> {
  readonly dry_run: true;
  readonly outcome: Outcome;
  readonly changes: readonly Change[];
}

export const dryRunAnswerSchema = z.object({
  dry_run: z.literal(true),
  outcome: z.unknown(),
  changes: z.array(changeSchema),
});

export function dryRunAnswer<Outcome>(outcome: Outcome, changes: readonly Change[]): DryRunAnswer<Outcome> {
  return { dry_run: true, outcome, changes };
}
