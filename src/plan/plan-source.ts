import { DomainError } from "../errors/light.js";
import { parseHardwareSpec, fleetFromHardwareSpec, fleetFromNodes, type InventoryNode } from "../fleet/index.js";
import { planCandidates, type Plan } from "./candidates.js";
import { maxNodesPerReplica } from "./multi-node-candidates.js";
import type { HubSettingNames } from "./model-files.js";
import { readModelSource } from "./read-model-source.js";

export interface PlanSourceOptions {
  /** A what-if fleet ("2xH100-80GB@nvl0,cpu:32c/256g"); without it, `liveNodes` is the fleet. */
  readonly gpus?: string | undefined;
  readonly liveNodes?: () => Promise<readonly InventoryNode[]>;
  readonly context?: number | undefined;
  /** Nodes per replica to plan for; undefined for the planner's own choice. */
  readonly nodes?: number | undefined;
  readonly gpuMemoryUtilization?: number | undefined;
  readonly hubEndpoint: string;
  readonly hubToken?: string | undefined;
  /** server.yaml's mirror, for `mirror:path` sources. */
  readonly mirror?: string | undefined;
  /** Named in hints when the hub fails; the server's settings when not given. */
  readonly hubSettings?: HubSettingNames | undefined;
}

/**
 * The whole of `ctl model plan` and GET /api/v1/plan: read the source, take
 * the fleet (what-if or live), list the candidates. One function so the CLI's
 * what-if and the server's answer can never disagree on a rule.
 */
export async function planSource(source: string, options: PlanSourceOptions): Promise<Plan> {
  const utilization = options.gpuMemoryUtilization;
  if (utilization !== undefined && !(utilization > 0 && utilization <= 1)) {
    throw new DomainError(
      "invalid_input",
      `GPU memory utilization ${utilization} is not a fraction of a card`,
      "Give a fraction between 0 and 1, such as 0.90 for 90% of each card.",
    );
  }
  if (options.nodes !== undefined && !(Number.isInteger(options.nodes) && options.nodes >= 1 && options.nodes <= maxNodesPerReplica)) {
    throw new DomainError("invalid_input", `${options.nodes} nodes per replica is not a count llmgw plans`, `Give a whole number from 1 to ${maxNodesPerReplica}.`);
  }
  const fleet =
    options.gpus !== undefined ? fleetFromHardwareSpec(parseHardwareSpec(options.gpus)) : fleetFromNodes([...((await options.liveNodes?.()) ?? [])]);
  const facts = await readModelSource(source, {
    hubEndpoint: options.hubEndpoint,
    ...(options.hubToken ? { hubToken: options.hubToken } : {}),
    ...(options.mirror !== undefined ? { mirror: options.mirror } : {}),
    ...(options.hubSettings ? { hubSettings: options.hubSettings } : {}),
  });
  return planCandidates(facts, fleet, {
    ...(options.context !== undefined ? { context: options.context } : {}),
    ...(options.nodes !== undefined ? { nodes: options.nodes } : {}),
    ...(utilization !== undefined ? { gpuMemoryUtilization: utilization } : {}),
  });
}
