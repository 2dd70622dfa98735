import { writeFile } from "node:fs/promises";
import path from "node:path";
import { redactUrl, parseWeightsSource } from "../catalog/for-agent.js";
import { cacheLocation } from "./weights-source.js";
import { downloadFile } from "./weights/download-file.js";
import type { FetchProgress, FetchWeightsOptions, RemoteFile } from "./weights/fetch-options.js";
import { listHttpFolder } from "./weights/list-http-folder.js";
import { listHubFiles } from "./weights/list-hub-files.js";
import { ProgressCounter } from "./weights/progress-counter.js";
import { withChecksumSuffix } from "./weights/published-checksum.js";
import { unavailable } from "./weights/remote-requests.js";
import { completeMarker, ensureRoom, sizeOf } from "./weights/weights-cache.js";

/** The promise's outcome, or the signal's abort if that comes first: a stopped replica does not wait on another's download. */
async function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return await promise;
  signal.throwIfAborted();
  let onAbort = (): void => undefined;
  const aborted = new Promise<never>((_resolve, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([promise, aborted]);
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}

/** One download in progress, and everyone watching it: a pull and a replica of one source see the same bytes. */
interface SharedFetch {
  readonly result: Promise<string>;
  readonly watchers: Set<(progress: FetchProgress) => void>;
  last: FetchProgress | undefined;
}

/** Fetches in progress by cache target: two replicas of one model share one download instead of corrupting one partial file. */
const fetchesInFlight = new Map<string, SharedFetch>();

/**
 * Puts a replica's weights in the cache and returns where the engine finds
 * them: a file (one URL, one hub file) or a folder. Local paths are used in
 * place. A source fetched completely before is not fetched again.
 */
export async function fetchWeights(options: FetchWeightsOptions): Promise<string> {
  const source = parseWeightsSource(options.source);
  const key = source.kind === "local" ? undefined : path.join(options.cacheDirectory, cacheLocation(source));
  for (let attempt = 0; key !== undefined && attempt < 3; attempt += 1) {
    const running = fetchesInFlight.get(key);
    if (!running) break;
    const watch = options.onProgress;
    if (watch) {
      running.watchers.add(watch);
      if (running.last) watch(running.last);
    }
    try {
      return await untilAborted(running.result, options.signal);
    } catch (error) {
      // The other fetch was stopped with its replica; this one goes on by itself.
      if (!(error instanceof Error && error.name === "AbortError") || options.signal?.aborted) throw error;
    } finally {
      if (watch) running.watchers.delete(watch);
    }
  }
  if (key === undefined) return await fetchUnshared(options);
  const watchers = new Set<(progress: FetchProgress) => void>(options.onProgress ? [options.onProgress] : []);
  let shared: SharedFetch | undefined;
  const result = fetchUnshared({
    ...options,
    onProgress: (progress) => {
      if (shared) shared.last = progress;
      for (const watch of watchers) watch(progress);
    },
  });
  shared = { result, watchers, last: undefined };
  fetchesInFlight.set(key, shared);
  void result.catch(() => undefined).finally(() => {
    if (fetchesInFlight.get(key) === shared) fetchesInFlight.delete(key);
  });
  return await result;
}

async function fetchUnshared(options: FetchWeightsOptions): Promise<string> {
  const source = parseWeightsSource(options.source);
  if (source.kind === "local") {
    if ((await sizeOf(source.path)) === undefined) {
      throw unavailable(
        `local path ${source.path} does not exist on node ${options.nodeName}`,
        "Put the weights at that path on this node (or on a shared mount), or give a URL the agent can fetch.",
      );
    }
    return source.path;
  }
  const target = path.join(options.cacheDirectory, cacheLocation(source));
  if (source.kind === "http-file") {
    // A pin in the source is the sum; without one, the mirror's `<file>.sha256` when it publishes one.
    const checksumUrl = source.sha256 === undefined ? withChecksumSuffix(source.url) : undefined;
    const file: RemoteFile = { url: source.url, relativePath: "", size: undefined, sha256: source.sha256, checksumUrl, headers: {} };
    await downloadFile(file, target, options, new ProgressCounter([file], options.onProgress));
    return target;
  }
  if ((await sizeOf(path.join(target, completeMarker))) !== undefined) {
    options.onProgress?.({ bytesDone: 1, bytesTotal: 1 });
    return target;
  }
  let files: RemoteFile[];
  let singleFile = false;
  if (source.kind === "http-folder") {
    files = await listHttpFolder(source.url, options);
  } else {
    ({ files, singleFile } = await listHubFiles(source, options));
  }
  const placed = files.map((file) => ({
    file,
    destination: singleFile ? target : path.join(target, ...file.relativePath.split("/").filter((segment) => segment !== "..")),
  }));
  await ensureRoom(options.cacheDirectory, placed, options.source, options.nodeName);
  const progress = new ProgressCounter(files, options.onProgress);
  if (!singleFile) progress.emit();
  for (const { file, destination } of placed) await downloadFile(file, destination, options, progress);
  if (singleFile) return target;
  await writeFile(path.join(target, completeMarker), `${new Date().toISOString()} ${redactUrl(options.source)}\n`);
  return target;
}
