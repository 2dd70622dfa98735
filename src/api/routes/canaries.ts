import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { parseDuration } from "../../catalog/light.js";
import { armCountsReportSchema, type ArmSlotReport } from "../../protocol/index.js";
import type { CanaryService } from "../../services/index.js";
import { requireActor } from "../access.js";
import { parseBody } from "../parse-body.js";

const nameParams = z.object({ name: z.string() });

const canaryBody = z.strictObject({
  /** A revision of the model's hub repository: a commit, a tag or a branch (no "/" or "@", which would change the repository path). */
  to: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/, { message: "a revision: a commit hash, tag or branch name (letters, digits, . _ -)" }),
  /** Percent of the model's requests; 100 sends every request to the canary. */
  weight: z.number().gt(0, { message: "a percentage above 0 and at most 100" }).max(100, { message: "a percentage above 0 and at most 100" }),
  replicas: z.number().int().min(1, { message: "a whole number of replicas, 1 to 64" }).max(64, { message: "a whole number of replicas, 1 to 64" }).default(1),
});

const gateBody = z
  .strictObject({
    max_error_rate: z.number().min(0, { message: "a fraction from 0 to 1 (0.05 is 5%)" }).max(1, { message: "a fraction from 0 to 1 (0.05 is 5%)" }).optional(),
    max_p95_ms: z.number().int().positive({ message: "milliseconds, a whole number above 0" }).optional(),
    min_requests: z.number().int().min(1, { message: "a whole number of requests, 1 or more" }),
    window: z
      .string()
      .refine((text) => (parseDuration(text) ?? 0) > 0, { message: "a duration such as 90s, 5m or 1h" })
      .default("5m"),
  })
  .refine((gate) => gate.max_error_rate !== undefined || gate.max_p95_ms !== undefined, {
    message: "a gate needs a limit: max_error_rate, max_p95_ms or both",
    path: ["max_error_rate"],
  });

/** Canaries: start one, list them with each arm's live numbers, set a gate, promote or abort by hand. */
export function registerCanaryRoutes(app: FastifyInstance, canaries: CanaryService, putArmSlots: (gateway: string, slots: readonly ArmSlotReport[]) => Promise<void>): void {
  // What `llmgw gateway` processes counted per arm, for the canaries' numbers and gates. Admin only, like the usage feed.
  app.post("/api/v1/gateway/arms", { config: { access: "admin", api: { summary: "A gateway's per-arm request counts (for llmgw gateway)", body: armCountsReportSchema } } }, async (request) => {
    const report = parseBody(armCountsReportSchema, request.body);
    await putArmSlots(report.gateway, report.slots);
    return { slots: report.slots.length };
  });

  app.post("/api/v1/models/:name/canary", { config: { access: "admin", dryRun: true, api: { summary: "Start a canary at another revision with a share of the traffic", body: canaryBody } } }, async (request) => {
    const actor = requireActor(request);
    const { name } = nameParams.parse(request.params);
    const body = parseBody(canaryBody, request.body ?? {});
    return await canaries.start(name, { revision: body.to, weight: body.weight, replicas: body.replicas }, actor, request.dryRun);
  });

  app.get("/api/v1/canaries", { config: { access: "read", api: { summary: "Every canary" } } }, async () => ({ canaries: await canaries.list() }));

  app.get("/api/v1/models/:name/canary", { config: { access: "read", api: { summary: "A model's canary" } } }, async (request) => {
    const { name } = nameParams.parse(request.params);
    return await canaries.get(name);
  });

  app.post("/api/v1/models/:name/canary/gate", { config: { access: "admin", dryRun: true, api: { summary: "The limits that promote or abort the running canary", body: gateBody } } }, async (request) => {
    const actor = requireActor(request);
    const { name } = nameParams.parse(request.params);
    const body = parseBody(gateBody, request.body ?? {});
    return await canaries.setGate(
      name,
      { max_error_rate: body.max_error_rate ?? null, max_p95_ms: body.max_p95_ms ?? null, min_requests: body.min_requests, window_ms: parseDuration(body.window) ?? 0 },
      actor,
      request.dryRun,
    );
  });

  for (const ending of ["promote", "abort"] as const) {
    app.post(`/api/v1/models/:name/canary/${ending}`, { config: { access: "admin", dryRun: true, api: { summary: `${ending === "promote" ? "Promote" : "Abort"} the running canary` } } }, async (request) => {
      const actor = requireActor(request);
      const { name } = nameParams.parse(request.params);
      return await canaries.end(name, ending, actor, request.dryRun);
    });
  }
}
