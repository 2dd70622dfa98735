import { readFile, rm } from "node:fs/promises";
import path from "node:path";
import { persistedReplicaSchema, type PersistedReplica } from "../agent-state.js";
import type { EngineMarker } from "../engine-marker.js";
import { readLogTail } from "../replica-log.js";

const logTailLines = 20;

/** Where a replica's log and spec file live under the agent's data directory, and how they are read back. */
export class ReplicaFiles {
  constructor(private readonly dataDirectory: string) {}

  get logsDirectory(): string {
    return path.join(this.dataDirectory, "logs");
  }

  logPath(id: string): string {
    return path.join(this.logsDirectory, `${id}.log`);
  }

  /**
   * Beside the log: what the agent needs to take an engine over (its spec,
   * port, health path), written before the engine starts. It lets an agent
   * that lost its state file adopt the engines it finds by their marker.
   * Readable by the agent's user only: the spec carries the profile's
   * environment.
   */
  specPath(id: string): string {
    return path.join(this.logsDirectory, `${id}.spec.json`);
  }

  async removeSpecFile(id: string, launchId: string): Promise<void> {
    // Only this launch's: a later start of the same id may have written its own meanwhile.
    const text = await readFile(this.specPath(id), "utf8").catch(() => undefined);
    if (text === undefined) return;
    try {
      if ((JSON.parse(text) as { launch_id?: unknown }).launch_id !== launchId) return;
    } catch {
      // a damaged file is of no use to anyone
    }
    await rm(this.specPath(id), { force: true }).catch(() => undefined);
  }

  async readSpecFile(marker: EngineMarker): Promise<PersistedReplica | undefined> {
    let json: unknown;
    try {
      json = JSON.parse(await readFile(this.specPath(marker.replicaId), "utf8"));
    } catch {
      return undefined;
    }
    const parsed = persistedReplicaSchema.safeParse(json);
    if (!parsed.success || parsed.data.launch_id !== marker.launchId || parsed.data.spec.id !== marker.replicaId) return undefined;
    return parsed.data;
  }

  async logTail(id: string): Promise<string> {
    const lines = await readLogTail(this.logPath(id), logTailLines);
    return lines.length > 0 ? `; last lines of ${this.logPath(id)}:\n${lines.join("\n")}` : `; its log ${this.logPath(id)} is empty`;
  }
}
