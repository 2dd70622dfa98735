import { redactUrl } from "../catalog/redact.js";
import { withUrlCredentials } from "../net/url-credentials.js";
import { gguf } from "@huggingface/gguf";
import { resolve } from "node:path";
import { DomainError, isDomainError } from "../errors/domain-error.js";
import { architectureFromConfig } from "./architecture.js";
import { architectureFromGguf, countGgufTensors, ggufFileTypeName, type GgufMetadata } from "./gguf-architecture.js";
import type { ModelFacts } from "./model-facts.js";
import {
  defaultHubEndpoint,
  hubFiles,
  httpFolderFiles,
  isDirectory,
  isFile,
  localFolderFiles,
  sourceUnreadable,
  type HubOptions,
  type ModelFiles,
} from "./model-files.js";
import {
  countWeights,
  parseSafetensorsHeader,
  prequantizedFormat,
  safetensorsDtypeBytes,
  safetensorsHeaderLength,
  shardsOfIndex,
  type PrequantizedFormat,
  type SafetensorsTensor,
} from "./safetensors.js";

export type ReadModelSourceOptions = HubOptions;

/**
 * Above this many shards the index's total_size and one shard's dtype stand
 * in for reading every header (each header is two small requests; a
 * 160-shard 405B checkpoint would be 320 round trips to a slow mirror).
 */
export const maxShardHeadersRead = 64;
const shardReadConcurrency = 8;

const hubIdPattern = /^([A-Za-z0-9][A-Za-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._-]*)(?:@([A-Za-z0-9._/-]+))?$/;

/**
 * Facts about a model from wherever it is:
 * - an HF id `Org/Name[@revision]`, read through @huggingface/hub from
 *   `hubEndpoint` (a mirror's base URL works);
 * - an http(s) URL of a folder on a mirror (config.json and safetensors
 *   headers by Range requests), or of a .gguf file;
 * - a local folder (config.json plus *.safetensors or the index), or a local .gguf file.
 */
export async function readModelSource(source: string, options: ReadModelSourceOptions = {}): Promise<ModelFacts> {
  const trimmed = source.trim();
  const isUrl = /^https?:\/\//i.test(trimmed);
  if (/\.gguf$/i.test(trimmed)) {
    if (isUrl) return readGguf(trimmed, trimmed, tokenHeaders(trimmed, options));
    if (await isFile(trimmed)) return readGguf(trimmed, resolve(trimmed), {});
    throw sourceUnreadable(trimmed, "no such file", "Give the path of a .gguf file that exists on this machine.");
  }
  if (isUrl) return readFolder(trimmed, httpFolderFiles(trimmed, tokenHeaders(trimmed, options)));
  if (await isDirectory(trimmed)) return readFolder(trimmed, localFolderFiles(resolve(trimmed)));
  const hubId = hubIdPattern.exec(trimmed);
  if (hubId && !trimmed.startsWith(".") && !trimmed.startsWith("/")) {
    const repository = hubId[1] as string;
    const revision = hubId[2] ?? "main";
    return readFolder(trimmed, hubFiles(repository, revision, options));
  }
  throw new DomainError(
    "source_unreadable",
    `"${source}" is not an HF id, a URL, a folder or a .gguf file here`,
    "Give Org/Name[@revision], an http(s) URL of a mirror folder, a local folder with config.json, or a .gguf file.",
  );
}

/**
 * The hub token goes only to the hub endpoint's own origin. A source URL is
 * user input (GET /api/v1/plan?source=…): sending the server's token to any
 * URL given would hand it to whoever runs that host.
 */
function tokenHeaders(url: string, options: ReadModelSourceOptions): Record<string, string> {
  if (!options.hubToken) return {};
  const hubOrigin = new URL(options.hubEndpoint ?? defaultHubEndpoint).origin;
  return new URL(url).origin === hubOrigin ? { Authorization: `Bearer ${options.hubToken}` } : {};
}

/**
 * A folder without config.json is refused even when it holds one .gguf: the
 * file decides the quantisation and the size, and a folder's lone .gguf may
 * be a vision projector (mmproj) or a draft model, not the model the person
 * meant. Naming what was found lets them plan the right file by its path.
 */
async function readFolder(source: string, files: ModelFiles): Promise<ModelFacts> {
  const listing = await files.list();
  const configText = await files.readText("config.json");
  if (configText === undefined) {
    const ggufFiles = listing?.filter((path) => /\.gguf$/i.test(path)) ?? [];
    const shown = ggufFiles.slice(0, 8).join(", ") + (ggufFiles.length > 8 ? `, and ${ggufFiles.length - 8} more` : "");
    throw sourceUnreadable(
      `config.json of ${files.description}`,
      ggufFiles.length > 0 ? `not found; the folder holds ${ggufFiles.length} GGUF file${ggufFiles.length === 1 ? "" : "s"}: ${shown}` : "not found",
      ggufFiles.length > 0
        ? `Plan a GGUF file by its own path (${source.replace(/\/+$/, "")}/${ggufFiles[0]}); a folder is planned from its config.json and safetensors.`
        : "A model folder needs the transformers config.json next to its weights; for llama.cpp, give the path of a .gguf file.",
    );
  }
  const configFile = `config.json of ${files.description}`;
  let config: unknown;
  try {
    config = JSON.parse(configText);
  } catch {
    throw sourceUnreadable(configFile, "is not JSON", "Check the file; a mirror may have served an error page instead.");
  }
  const architecture = architectureFromConfig(config, configFile);
  const prequantized = prequantizedFormat(config);
  const weights = await readSafetensorsWeights(files, listing, prequantized);
  return {
    source,
    architecture,
    parameters: weights.parameters,
    checkpoint: { format: "safetensors", dtype: weights.dtype, bytes: weights.bytes, quantization: prequantized?.quantization },
    ggufFileType: undefined,
    provenance: { architecture: configFile, parameters: `${weights.provenance} of ${files.description}` },
  };
}

async function readHeader(files: ModelFiles, path: string): Promise<SafetensorsTensor[] | undefined> {
  const what = `${path} of ${files.description}`;
  const prefix = await files.readRange(path, 0, 8);
  if (prefix === undefined) return undefined;
  const length = safetensorsHeaderLength(prefix, what);
  const header = await files.readRange(path, 8, 8 + length);
  if (header === undefined || header.length < length) throw sourceUnreadable(what, "ended inside its header", "Re-download the file; it was cut short.");
  return parseSafetensorsHeader(header, what);
}

async function mapLimited<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next;
      next += 1;
      results[index] = await work(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

interface WeightsReading {
  readonly parameters: number;
  readonly bytes: number;
  readonly dtype: string;
  readonly provenance: string;
}

async function readSafetensorsWeights(
  files: ModelFiles,
  listing: string[] | undefined,
  prequantized: PrequantizedFormat | undefined,
): Promise<WeightsReading> {
  const indexName = "model.safetensors.index.json";
  const hasIndex = listing === undefined || listing.includes(indexName);
  const indexText = hasIndex ? await files.readText(indexName) : undefined;
  if (indexText !== undefined) {
    let index: unknown;
    try {
      index = JSON.parse(indexText);
    } catch {
      throw sourceUnreadable(`${indexName} of ${files.description}`, "is not JSON", "Check the file.");
    }
    const { shards, totalSize } = shardsOfIndex(index, `${indexName} of ${files.description}`);
    if (shards.length <= maxShardHeadersRead || totalSize === undefined) {
      const headers = await mapLimited(shards, shardReadConcurrency, async (shard) => {
        const header = await readHeader(files, shard);
        if (!header) throw sourceUnreadable(`${shard} of ${files.description}`, `is named in ${indexName} but missing`, "The checkpoint is incomplete.");
        return header;
      });
      const count = countWeights(headers.flat(), prequantized);
      return { ...count, provenance: `headers of ${shards.length} shard${shards.length === 1 ? "" : "s"} named in ${indexName}` };
    }
    // Many shards: the index's total_size in the dtype of the first shard.
    const first = await readHeader(files, shards[0] as string);
    const dtype = first ? countWeights(first, prequantized).dtype : "BF16";
    const bytesPerElement = safetensorsDtypeBytes[dtype] ?? 2;
    return {
      parameters: Math.round(totalSize / bytesPerElement),
      bytes: totalSize,
      dtype,
      provenance: `${indexName} total_size (${shards.length} shards, dtype ${dtype} from ${shards[0]})`,
    };
  }
  const single = listing?.filter((path) => path.endsWith(".safetensors") && !path.includes("/")) ?? ["model.safetensors"];
  if (single.length > 0) {
    const headers: SafetensorsTensor[] = [];
    const read: string[] = [];
    for (const path of single) {
      const header = await readHeader(files, path);
      if (header) {
        headers.push(...header);
        read.push(path);
      }
    }
    if (read.length > 0) return { ...countWeights(headers, prequantized), provenance: `header of ${read.join(", ")}` };
  }
  throw new DomainError(
    "weights_metadata_missing",
    `${files.description} has no safetensors weights to count parameters from (no ${indexName}, no *.safetensors)`,
    "Point the planner at a folder with the model's safetensors files (the planner reads only their headers), or at a .gguf file.",
  );
}

/** Facts from a GGUF file, local or remote, read by @huggingface/gguf (header and tensor infos only). */
async function readGguf(source: string, location: string, headers: Record<string, string>): Promise<ModelFacts> {
  let parsed: Awaited<ReturnType<typeof gguf>>;
  try {
    const remote = /^https?:\/\//i.test(location);
    const target = remote ? withUrlCredentials(location, headers) : { url: location, headers };
    parsed = await gguf(target.url, { allowLocalFile: !remote, additionalFetchHeaders: target.headers });
  } catch (error) {
    if (isDomainError(error)) throw error;
    throw sourceUnreadable(redactUrl(location), error instanceof Error ? error.message : String(error), "Check that the file is a GGUF file (it starts with the magic bytes \"GGUF\").");
  }
  // The library types metadata per architecture; we read it by key name.
  const metadata = parsed.metadata as unknown as GgufMetadata;
  const tensors = parsed.tensorInfos.map((info) => ({ name: info.name, shape: info.shape, dtype: info.dtype as number }));
  const file = `GGUF metadata of ${location}`;
  const architecture = architectureFromGguf(metadata, tensors, file);
  const { parameters, bytes } = countGgufTensors(tensors, file);
  const fileType = ggufFileTypeName(metadata);
  return {
    source,
    architecture,
    parameters,
    checkpoint: { format: "gguf", dtype: fileType ?? "GGUF", bytes, quantization: undefined },
    ggufFileType: fileType,
    provenance: { architecture: file, parameters: `tensor infos of ${location} (${tensors.length} tensors)` },
  };
}

export { defaultHubEndpoint };
