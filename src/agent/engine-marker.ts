import { z } from "zod";
import { engineNames } from "../catalog/light.js";
import { replicaIdSchema } from "../protocol/for-agent.js";

/**
 * What the agent writes into every engine's environment so that it can find
 * the engines it started without its state file (a disk replaced, a folder
 * wiped): an engine found by nobody keeps its cards while the server places
 * a new replica on them. /proc/PID/environ keeps these for the life of the
 * process, and every process the engine forks inherits them, so workers that
 * left the engine's process group are found too.
 *
 * The agent's data directory is its identity: two agents on one machine (two
 * data directories) never touch each other's engines, and an agent started
 * again on the same directory, even emptied, finds what the last one left.
 */
export const markerVariables = {
  agentDirectory: "LLMGW_AGENT_DIR",
  node: "LLMGW_NODE",
  replicaId: "LLMGW_REPLICA_ID",
  /** One per engine process started: tells an engine apart from a later one of the same replica id. */
  launchId: "LLMGW_LAUNCH_ID",
  model: "LLMGW_MODEL",
  profile: "LLMGW_PROFILE",
  engine: "LLMGW_ENGINE",
  /** The node's card indices, comma-separated, so the cards it holds are known without any record. */
  cards: "LLMGW_CARDS",
} as const;

const markerSchema = z.object({
  agentDirectory: z.string().min(1),
  node: z.string().min(1),
  replicaId: replicaIdSchema,
  launchId: z.string().regex(/^[0-9a-f]{16,64}$/),
  model: z.string().min(1),
  profile: z.string().min(1),
  engine: z.enum(engineNames),
  cards: z
    .string()
    .regex(/^(\d{1,4}(,\d{1,4})*)?$/)
    .transform((text) => (text === "" ? [] : text.split(",").map(Number))),
});
export type EngineMarker = z.infer<typeof markerSchema>;
export type EngineMarkerInput = z.input<typeof markerSchema>;

export function markerEnvironment(marker: EngineMarker): Record<string, string> {
  return {
    [markerVariables.agentDirectory]: marker.agentDirectory,
    [markerVariables.node]: marker.node,
    [markerVariables.replicaId]: marker.replicaId,
    [markerVariables.launchId]: marker.launchId,
    [markerVariables.model]: marker.model,
    [markerVariables.profile]: marker.profile,
    [markerVariables.engine]: marker.engine,
    [markerVariables.cards]: marker.cards.join(","),
  };
}

/** The agent directory a process's environment names, whether or not the rest of its marker reads. */
export function markedAgentDirectory(environment: Readonly<Record<string, string>>): string | undefined {
  return environment[markerVariables.agentDirectory];
}

/**
 * The marker in a process's environment, or undefined when it has none or a
 * damaged one. A process's environment is outside input (the engine may
 * rewrite its own), so it is checked as strictly as a request body.
 */
export function readMarker(environment: Readonly<Record<string, string>>): EngineMarker | undefined {
  const parsed = markerSchema.safeParse({
    agentDirectory: environment[markerVariables.agentDirectory],
    node: environment[markerVariables.node],
    replicaId: environment[markerVariables.replicaId],
    launchId: environment[markerVariables.launchId],
    model: environment[markerVariables.model],
    profile: environment[markerVariables.profile],
    engine: environment[markerVariables.engine],
    cards: environment[markerVariables.cards],
  });
  return parsed.success ? parsed.data : undefined;
}
