import { mkdir } from "node:fs/promises";
import path from "node:path";
import { parseWeightsSource } from "../../catalog/for-agent.js";
import { prepareComfyui } from "../prepare-comfyui.js";
import { fetchWeights } from "../weights-fetcher.js";
import { cacheLocation } from "../weights-source.js";
import type { Replica } from "./replica-record.js";
import type { ReplicaSupervisorOptions } from "./supervisor-options.js";

/** Puts a replica's files on the node (fetched, or pretended under simulation) and reports its progress. */
export class ReplicaWeights {
  constructor(private readonly options: ReplicaSupervisorOptions) {}

  private get weightsDirectory(): string {
    return path.join(this.options.dataDirectory, "weights");
  }

  async fetch(replica: Replica): Promise<string> {
    return await this.fetchSource(replica, replica.spec.source, true);
  }

  async prepareComfyui(replica: Replica): Promise<string> {
    const simulation = this.options.simulation;
    const folder = await prepareComfyui({
      setup: this.options.comfyui ?? { folder: this.options.enginePaths.comfyui ?? path.join(this.options.dataDirectory, "ComfyUI"), installCommand: undefined },
      comfy: replica.spec.comfy ?? { files: [], custom_nodes: [] },
      nodeName: this.options.nodeName,
      pretendFiles: simulation !== undefined && !simulation.fetch,
      pretendCustomNodes: simulation !== undefined,
      fetchFile: async (source) => await this.fetchSource(replica, source, true),
      log: (line) => this.options.logger.info({ replica: replica.spec.id }, line),
      signal: replica.abort.signal,
    });
    if (simulation && !simulation.fetch) {
      replica.progress = { fraction: 1, bytes_done: 0, bytes_total: 0 };
      this.options.onChange("progress");
    }
    this.options.onInventoryChanged?.();
    return folder;
  }

  async fetchSource(replica: Replica, source: string, reportProgress: boolean): Promise<string> {
    const simulation = this.options.simulation;
    const parsed = parseWeightsSource(source);
    if (simulation && !simulation.fetch && parsed.kind !== "local") {
      // Pretend weights: the demo and CI have no network and no room for real models.
      const pretend = path.join(this.weightsDirectory, "simulated", cacheLocation(parsed));
      await mkdir(pretend, { recursive: true });
      if (reportProgress) {
        replica.progress = { fraction: 1, bytes_done: 0, bytes_total: 0 };
        this.options.onChange("progress");
      }
      return pretend;
    }
    return await fetchWeights({
      source,
      cacheDirectory: this.weightsDirectory,
      nodeName: this.options.nodeName,
      hubUrl: this.options.hubUrl,
      hubToken: this.options.hubToken,
      signal: replica.abort.signal,
      onProgress: reportProgress
        ? (progress) => {
            replica.progress = {
              fraction: progress.bytesTotal ? Math.min(1, progress.bytesDone / progress.bytesTotal) : 0,
              bytes_done: progress.bytesDone,
              ...(progress.bytesTotal !== undefined ? { bytes_total: progress.bytesTotal } : {}),
            };
            this.options.onChange("progress");
          }
        : undefined,
    });
  }
}
