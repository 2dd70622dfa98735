import { mkdir, stat, statfs } from "node:fs/promises";
import path from "node:path";
import { redactUrl, parseWeightsSource } from "../../catalog/for-agent.js";
import { DomainError } from "../../errors/light.js";
import { cacheLocation } from "../weights-source.js";
import type { RemoteFile } from "./fetch-options.js";
import { unavailable } from "./remote-requests.js";

/** A folder is complete once this marker exists; without it a restarted agent checks every file again. */
export const completeMarker = ".llmgw-complete";

export async function sizeOf(file: string): Promise<number | undefined> {
  try {
    return (await stat(file)).size;
  } catch {
    return undefined;
  }
}

/**
 * Refuses a download that cannot fit, before it starts: a disk filled at 95%
 * of a 140 GB model fails late and takes the node's logs and state with it.
 */
export async function ensureRoom(directory: string, files: readonly { file: RemoteFile; destination: string }[], source: string, nodeName: string): Promise<void> {
  if (files.some(({ file }) => file.size === undefined)) return;
  let needed = 0;
  for (const { file, destination } of files) {
    // What is on disk already (a finished file, or a partial a restart resumes) needs no more room:
    // counting it would refuse the resume of a large download on a disk that holds most of it.
    const onDisk = (await sizeOf(destination)) ?? (await sizeOf(`${destination}.partial`)) ?? 0;
    needed += Math.max(0, (file.size ?? 0) - onDisk);
  }
  const shortage = await roomShortage(directory, needed, redactUrl(source), nodeName);
  if (shortage) throw shortage;
}

/** The refusal when `needed` bytes do not fit in the free space of `directory`'s disk, or undefined when they do. */
export async function roomShortage(directory: string, needed: number, what: string, nodeName: string): Promise<DomainError | undefined> {
  if (needed <= 0) return undefined;
  await mkdir(directory, { recursive: true });
  const disk = await statfs(directory);
  const free = Number(disk.bavail) * Number(disk.bsize);
  if (needed <= free) return undefined;
  const GiB = 1024 ** 3;
  return unavailable(
    `${what} needs ${(needed / GiB).toFixed(1)} GiB but ${directory} on node ${nodeName} has ${(free / GiB).toFixed(1)} GiB free`,
    "Free space in the agent's weights cache (remove models no longer served from DATA_DIR/weights), or give the agent a larger --data-dir.",
  );
}

/**
 * Where a source already sits complete in the cache, or undefined: a pull
 * of a model fetched before answers at once, without asking the mirror.
 */
export async function cachedWeights(source: string, cacheDirectory: string): Promise<string | undefined> {
  const parsed = parseWeightsSource(source);
  if (parsed.kind === "local") return (await sizeOf(parsed.path)) === undefined ? undefined : parsed.path;
  const target = path.join(cacheDirectory, cacheLocation(parsed));
  if (parsed.kind === "http-file") return (await sizeOf(target)) === undefined ? undefined : target;
  // A hub source naming one file is a file in the cache; a folder is complete only with its marker.
  const info = await stat(target).catch(() => undefined);
  if (info?.isFile()) return target;
  return (await sizeOf(path.join(target, completeMarker))) === undefined ? undefined : target;
}
