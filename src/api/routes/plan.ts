import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { parseQuery } from "../parse-body.js";
import type { InventoryNode } from "../../fleet/index.js";
import { planSource, type ReadModelSourceOptions } from "../../plan/index.js";
import { parseTokenCount } from "../../plan/light.js";

/** The live fleet, as the planner reads it; empty until nodes join. */
export type FleetSource = () => Promise<readonly InventoryNode[]>;

export const noFleet: FleetSource = async () => [];

export interface PlanSettings {
  readonly hubEndpoint: string;
  /** Read from the server's environment at each call, so a rotated token needs no restart; never echoed. */
  readonly hubToken: () => string | undefined;
  readonly gpuMemoryUtilization: number;
  /** server.yaml's `mirror`, which `mirror:path` sources resolve against. */
  readonly mirror?: string | undefined;
}

/**
 * What a reader of models on the server is given: the hub endpoint, the token
 * as the environment holds it now (so a rotated token needs no restart), and
 * the mirror. One place, so the plan, the source check, the presets, the
 * reconciler and the version and adapter checks read a source alike.
 */
export function serverReadOptions(settings: PlanSettings): ReadModelSourceOptions {
  const hubToken = settings.hubToken();
  return { hubEndpoint: settings.hubEndpoint, ...(hubToken ? { hubToken } : {}), ...(settings.mirror !== undefined ? { mirror: settings.mirror } : {}) };
}

const planQuery = z.strictObject({
  source: z.string().min(1, { message: "an HF id (Org/Name[@revision]), a mirror folder URL, or a path on the server" }),
  // The forms the plan itself prints (32k, 1M) as well as plain numbers, as `ctl model plan --context` takes them.
  context: z
    .string()
    .transform((text, context) => {
      const tokens = parseTokenCount(text);
      if (tokens === undefined || tokens < 1) {
        context.addIssue({ code: "custom", message: "a number of tokens, 1 or more, such as 32768, 32k or 1M (k = 1024)" });
        return z.NEVER;
      }
      return tokens;
    })
    .optional(),
  gpus: z.string().optional(),
  nodes: z.coerce.number().int().min(1).max(8).optional(),
});

/**
 * GET /api/v1/plan. Admin-only although it changes nothing: it makes the
 * server read any URL or local path it is given, which a read-only token must
 * not be able to aim (at the server's own files, or at hosts only it can
 * reach). A what-if plan in the CLI reads from the person's machine instead.
 */
const readOnlyRefusal = {
  because: "planning on the server needs an admin token, since the server reads whatever URL or path the plan names",
  hint: "Use an admin token (--token or LLMGW_TOKEN), or plan on your own machine against a what-if fleet: `llmgw ctl model plan SOURCE --gpus SPEC` needs no token.",
};

export function registerPlanRoutes(app: FastifyInstance, settings: PlanSettings, fleetSource: FleetSource): void {
  app.get("/api/v1/plan", { config: { access: "admin", readOnlyRefusal, api: { summary: "Does a model fit, and how to split it (docs/PLAN.md)", query: planQuery } } }, async (request) => {
    const query = parseQuery(planQuery, request.query);
    return planSource(query.source, {
      gpus: query.gpus,
      liveNodes: fleetSource,
      context: query.context,
      nodes: query.nodes,
      gpuMemoryUtilization: settings.gpuMemoryUtilization,
      hubEndpoint: settings.hubEndpoint,
      hubToken: settings.hubToken(),
      mirror: settings.mirror,
    });
  });
}
