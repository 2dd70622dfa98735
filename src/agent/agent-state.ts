import { readFile } from "node:fs/promises";
import { z } from "zod";
import { writePrivateFile } from "../files/index.js";
import { DomainError } from "../errors/light.js";
import { describeIssues } from "../catalog/for-agent.js";
import { replicaProgressSchema, replicaSpecSchema, replicaStates } from "../protocol/for-agent.js";

/**
 * What a restarted agent needs to adopt its engines and rejoin without a new
 * join token: DATA_DIR/agent-state.json. It holds the node credential, so it
 * is written readable by its owner only.
 */
export const persistedReplicaSchema = z.object({
  spec: replicaSpecSchema,
  state: z.enum(replicaStates),
  since: z.string(),
  port: z.number().int().optional(),
  pid: z.number().int().optional(),
  process_group: z.number().int().optional(),
  /** The engine's marker (LLMGW_LAUNCH_ID): finds the processes of this launch, its workers included. */
  launch_id: z.string().optional(),
  /** /proc start time, so a pid reused by another program after the engine died is not adopted. */
  start_ticks: z.string().optional(),
  health_path: z.string().optional(),
  /** The engine serves nothing to probe (a headless worker): adopted by its process alone. Absent: probe health_path, or /health. */
  headless: z.boolean().optional(),
  /** A gang leader's rendezvous port, reserved when the start was accepted: a restarted agent reports the same one. */
  rendezvous_port: z.number().int().min(1).max(65535).optional(),
  metrics_path: z.string().optional(),
  weights_path: z.string().optional(),
  reason: z.string().optional(),
  progress: replicaProgressSchema.optional(),
  /** A terminal state already delivered to the server in a heartbeat. */
  reported: z.boolean().optional(),
});
export type PersistedReplica = z.infer<typeof persistedReplicaSchema>;

export const agentStateSchema = z.object({
  version: z.literal(1),
  /** Where the credential was last used; the server may be reached by another address later. */
  server_url: z.string(),
  /** The identity of the server that gave the credential: the credential is sent to a server at another URL only when it presents this. Absent from files of earlier releases. */
  server_id: z.string().optional(),
  node_name: z.string(),
  credential: z.string().optional(),
  /** sha256 (hex) of the secret the server presents on control calls; the secret itself is never kept here. */
  control_secret_hash: z.string().regex(/^[0-9a-f]{64}$/).optional(),
  replicas: z.array(persistedReplicaSchema),
});
export type AgentState = z.infer<typeof agentStateSchema>;

export async function readAgentState(file: string): Promise<AgentState | undefined> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  const moveAside = "Move the file aside to start afresh (engines it started keep running and must then be stopped by hand)";
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    // Writes are atomic, so this is damage from outside (a full disk, a hand edit, a copy cut short).
    throw new DomainError("config_invalid", `${file} is not JSON, so the agent cannot read its state: ${(error as Error).message}`, `${moveAside}.`);
  }
  const parsed = agentStateSchema.safeParse(json);
  if (!parsed.success) {
    throw new DomainError(
      "config_invalid",
      `${file} is not an agent state file this version can read: ${describeIssues(parsed.error.issues)}`,
      `${moveAside}, or run the agent version that wrote it.`,
    );
  }
  return parsed.data;
}

/**
 * Writes are atomic (a temporary file renamed over the old one, which POSIX
 * makes all-or-nothing) and serialised: an agent killed mid-write leaves the
 * previous state, never half a file that would orphan every engine.
 */
export class AgentStateWriter {
  private queue: Promise<void> = Promise.resolve();
  constructor(private readonly file: string) {}

  write(state: AgentState): Promise<void> {
    const text = `${JSON.stringify(state, null, 2)}\n`;
    const next = this.queue.then(async () => await writePrivateFile(this.file, text));
    this.queue = next.catch(() => undefined);
    return next;
  }

  async flushed(): Promise<void> {
    await this.queue;
  }
}
