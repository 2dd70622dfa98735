import { readdir, stat } from "node:fs/promises";
import path from "node:path";
import type { Logger } from "pino";
import { redactUrl, parseWeightsSource } from "../catalog/for-agent.js";
import { isDomainError } from "../errors/light.js";
import { maxFetchesListed, type FetchStatus } from "../protocol/for-agent.js";
import { fetchWeights } from "./weights-fetcher.js";
import type { FetchProgress } from "./weights/fetch-options.js";
import { cachedWeights } from "./weights/weights-cache.js";

export interface WeightsPullerOptions {
  readonly nodeName: string;
  /** DATA_DIR/weights, the cache replicas read from: a pulled source is found there by the replica that needs it. */
  readonly cacheDirectory: string;
  readonly hubUrl: string;
  readonly hubToken: string | undefined;
  /** A simulated agent that does not fetch (--simulate without --simulate-fetch): a pull is answered at once, saying so. */
  readonly pretend: boolean;
  readonly logger: Logger;
}

interface Pull {
  status: FetchStatus;
  abort: AbortController;
}

/** Bytes a file or folder takes, without the cache's own bookkeeping (partials, markers). */
async function sizeOnDisk(target: string): Promise<number> {
  const info = await stat(target);
  if (!info.isDirectory()) return info.size;
  let total = 0;
  for (const entry of await readdir(target, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || entry.name.startsWith(".llmgw-") || entry.name.endsWith(".partial") || entry.name.endsWith(".partial.json")) continue;
    total += (await stat(path.join(entry.parentPath, entry.name))).size;
  }
  return total;
}

function now(): string {
  return new Date().toISOString();
}

/**
 * Puts sources in the agent's weights cache without starting an engine, so
 * a model's first load is not a download. Each source is fetched by the
 * fetcher replicas use (resumable, checksummed, one download shared with a
 * replica fetching the same source), and its progress is kept here for the
 * server to read when it is asked (`GET /agent/v1/fetches`).
 */
export class WeightsPuller {
  private readonly pulls = new Map<string, Pull>();

  constructor(private readonly options: WeightsPullerOptions) {}

  /** Starts fetching `source` unless it is cached or already coming; answers where it stands. */
  async pull(source: string): Promise<FetchStatus> {
    // A source this agent cannot read (a literal mirror:, a scheme it cannot fetch) is refused now, as invalid input.
    parseWeightsSource(source);
    const running = this.pulls.get(source);
    if (running?.status.state === "fetching") return running.status;
    if (this.options.pretend && parseWeightsSource(source).kind !== "local") {
      return this.record(source, { source, state: "cached", bytes_done: 0, size_bytes: 0, simulated: true, since: now() }).status;
    }
    const cached = await cachedWeights(source, this.options.cacheDirectory);
    if (cached !== undefined) {
      const size = await sizeOnDisk(cached);
      return this.record(source, { source, state: "cached", bytes_done: size, bytes_total: size, size_bytes: size, already_cached: true, since: now() }).status;
    }
    const pull = this.record(source, { source, state: "fetching", bytes_done: 0, since: now() });
    void this.fetch(pull);
    return pull.status;
  }

  list(): FetchStatus[] {
    return [...this.pulls.values()].map((pull) => pull.status);
  }

  /** Stops every download in progress; what was fetched stays in the partial files for the next pull to resume. */
  close(): void {
    for (const pull of this.pulls.values()) pull.abort.abort();
  }

  private record(source: string, status: FetchStatus): Pull {
    this.pulls.get(source)?.abort.abort();
    const pull: Pull = { status, abort: new AbortController() };
    this.pulls.delete(source);
    this.pulls.set(source, pull);
    // The oldest finished pulls go first; a list past the protocol's bound would be refused by the server.
    for (const [key, old] of this.pulls) {
      if (this.pulls.size <= maxFetchesListed) break;
      if (old.status.state !== "fetching") this.pulls.delete(key);
    }
    return pull;
  }

  private async fetch(pull: Pull): Promise<void> {
    const { source } = pull.status;
    const onProgress = (progress: FetchProgress): void => {
      if (pull.status.state !== "fetching") return;
      pull.status = { ...pull.status, bytes_done: progress.bytesDone, ...(progress.bytesTotal !== undefined ? { bytes_total: progress.bytesTotal } : {}) };
    };
    try {
      const target = await fetchWeights({
        source,
        cacheDirectory: this.options.cacheDirectory,
        nodeName: this.options.nodeName,
        hubUrl: this.options.hubUrl,
        hubToken: this.options.hubToken,
        signal: pull.abort.signal,
        onProgress,
      });
      const size = await sizeOnDisk(target);
      pull.status = { source, state: "cached", bytes_done: size, bytes_total: size, size_bytes: size, already_cached: false, since: now() };
      this.options.logger.info({ source: redactUrl(source), bytes: size }, "weights-pulled");
    } catch (error) {
      if (pull.abort.signal.aborted) return;
      const reason = isDomainError(error) ? `${error.message}. ${error.hint}` : `agent error on node ${this.options.nodeName}: ${(error as Error).message}`;
      pull.status = { ...pull.status, state: "failed", reason, since: now() };
    }
  }
}
