import { redactUrl, parseWeightsSource, sourceGrammarHint, type SourceContext } from "../catalog/index.js";
import { withUrlCredentials } from "../net/index.js";
import { gguf, parseGgufShardFilename } from "@huggingface/gguf";
import { DomainError, isDomainError } from "../errors/light.js";
import { architectureFromConfig } from "./architecture.js";
import { architectureFromGguf, countGgufTensors, ggufFileTypeName, type GgufMetadata, type GgufTensor } from "./gguf-architecture.js";
import type { ModelFacts } from "./model-facts.js";
import {
  defaultHubEndpoint,
  hubFiles,
  httpFolderFiles,
  isDirectory,
  isFile,
  localFolderFiles,
  sourceUnreadable,
  connectionFailure,
  connectionHint,
  fetchWithin,
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

export type ReadModelSourceOptions = HubOptions & SourceContext;

/**
 * Above this many shards the index's total_size and one shard's dtype stand
 * in for reading every header (each header is two small requests; a
 * 160-shard 405B checkpoint would be 320 round trips to a slow mirror).
 */
export const maxShardHeadersRead = 64;
const shardReadConcurrency = 8;

/**
 * Facts about a model from wherever it is, in the one source grammar the
 * catalog and the agent use (catalog/weights-source.ts):
 * - a hub repository, `hf://Org/Name[@revision]` or `Org/Name[@revision]`,
 *   read through @huggingface/hub from `hubEndpoint` (a mirror's base URL
 *   works), or one .gguf file in it (`hf://Org/Name@rev/file.gguf`);
 * - an http(s) URL of a folder (ending in /: config.json and safetensors
 *   headers by Range requests) or of a .gguf file;
 * - `mirror:path` under the configured mirror;
 * - a local folder (config.json plus *.safetensors or the index), or a local .gguf file.
 */
export async function readModelSource(source: string, options: ReadModelSourceOptions = {}): Promise<ModelFacts> {
  const trimmed = source.trim();
  const parsed = parseWeightsSource(trimmed, options);
  switch (parsed.kind) {
    case "http-file":
      if (!/\.gguf$/i.test(new URL(parsed.url).pathname)) {
        throw sourceUnreadable(redactUrl(parsed.url), "is a URL of one file that is not a .gguf", "A model folder's URL ends in / (https://mirror/models/Qwen2.5-7B-Instruct/); a single file must be a GGUF.");
      }
      return readGguf(trimmed, parsed.url, tokenHeaders(parsed.url, options), options.requestTimeoutMs);
    case "http-folder":
      return readFolder(trimmed, httpFolderFiles(parsed.url, tokenHeaders(parsed.url, options), options.requestTimeoutMs));
    case "hub": {
      if (parsed.path === "") return readFolder(trimmed, hubFiles(parsed.repo, parsed.revision, options));
      if (/\.gguf$/i.test(parsed.path)) {
        const url = `${(options.hubEndpoint ?? defaultHubEndpoint).replace(/\/+$/, "")}/${parsed.repo}/resolve/${encodeURIComponent(parsed.revision)}/${parsed.path}`;
        return readGguf(trimmed, url, tokenHeaders(url, options), options.requestTimeoutMs);
      }
      throw sourceUnreadable(trimmed, "names a folder inside a repository", "Plan the repository itself (hf://org/name@revision), or one .gguf file in it.");
    }
    case "local": {
      if (/\.gguf$/i.test(parsed.path)) {
        if (await isFile(parsed.path)) return readGguf(trimmed, parsed.path, {});
        throw sourceUnreadable(trimmed, "no such file", "Give the path of a .gguf file that exists on this machine.");
      }
      if (await isDirectory(parsed.path)) return readFolder(trimmed, localFolderFiles(parsed.path));
      throw new DomainError(
        "source_unreadable",
        `"${source}" is not a folder or a .gguf file on this machine`,
        `${sourceGrammarHint} A hub id is org/name; a local folder is an absolute path or starts with ./`,
      );
    }
  }
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
  const weights = await readSafetensorsWeights(files, listing, prequantized, config);
  return {
    source,
    architecture,
    parameters: weights.parameters,
    checkpoint: { format: "safetensors", dtype: weights.dtype, bytes: weights.bytes, quantization: prequantized?.quantization },
    ggufFileType: undefined,
    provenance: { architecture: configFile, parameters: `${weights.provenance} of ${files.description}` },
  };
}

/**
 * A folder holding config.json and the index but none of the shards: what
 * `hf download --include "*.json"` leaves, to plan before a 140 GB download.
 * The index's total_size is the checkpoint's bytes; the dtype comes from
 * config.json (torch_dtype, or dtype in newer transformers), since the
 * weight map names tensors but not their types. Some shards present and
 * others missing is a cut download, not this case, and stays an error.
 */
async function indexWithoutShards(
  files: ModelFiles,
  listing: string[] | undefined,
  shards: readonly string[],
  totalSize: number | undefined,
  config: unknown,
): Promise<WeightsReading | undefined> {
  const first = shards[0];
  if (totalSize === undefined || first === undefined) return undefined;
  const present = listing !== undefined ? shards.some((shard) => listing.includes(shard)) : (await files.readRange(first, 0, 8)) !== undefined;
  if (present) return undefined;
  const dtype = configDtype(config) ?? "BF16";
  const bytesPerElement = safetensorsDtypeBytes[dtype] ?? 2;
  return {
    parameters: Math.round(totalSize / bytesPerElement),
    bytes: totalSize,
    dtype,
    provenance: `model.safetensors.index.json total_size alone (none of its ${shards.length} shard${shards.length === 1 ? " is" : "s are"} present; dtype ${dtype} from config.json)`,
  };
}

const configDtypes: Readonly<Record<string, string>> = { bfloat16: "BF16", float16: "F16", float32: "F32", float8_e4m3fn: "F8_E4M3" };

function configDtype(config: unknown): string | undefined {
  if (typeof config !== "object" || config === null) return undefined;
  const record = config as { torch_dtype?: unknown; dtype?: unknown; text_config?: unknown };
  const named = typeof record.torch_dtype === "string" ? record.torch_dtype : typeof record.dtype === "string" ? record.dtype : undefined;
  if (named !== undefined) return configDtypes[named];
  return configDtype(record.text_config);
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
  config: unknown,
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
    // Packed 4-bit weights make bytes say nothing of the parameter count without the headers.
    const indexOnly = prequantized === undefined ? await indexWithoutShards(files, listing, shards, totalSize, config) : undefined;
    if (indexOnly) return indexOnly;
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

async function parseGguf(location: string, headers: Record<string, string>, timeoutMs: number | undefined): Promise<Awaited<ReturnType<typeof gguf>>> {
  const remote = /^https?:\/\//i.test(location);
  try {
    const target = remote ? withUrlCredentials(location, headers) : { url: location, headers };
    return await gguf(target.url, { allowLocalFile: !remote, additionalFetchHeaders: target.headers, fetch: fetchWithin(timeoutMs) });
  } catch (error) {
    if (isDomainError(error)) throw error;
    const unconnected = (remote && error instanceof TypeError) || (error instanceof Error && error.name === "TimeoutError");
    if (unconnected) throw sourceUnreadable(redactUrl(location), connectionFailure(error, timeoutMs), connectionHint(error));
    throw sourceUnreadable(redactUrl(location), error instanceof Error ? error.message : String(error), "Check that the file is a GGUF file (it starts with the magic bytes \"GGUF\").");
  }
}

function tensorsOf(parsed: Awaited<ReturnType<typeof gguf>>): GgufTensor[] {
  return parsed.tensorInfos.map((info) => ({ name: info.name, shape: info.shape, dtype: info.dtype as number }));
}

/**
 * The tensors of every part of a GGUF published in parts
 * (`…-00001-of-00003.gguf`, `split.count` in the first part's header).
 * Counting the first part alone once put a third of Llama-3.3-70B Q8_0 on
 * one 80 GB card; a part that cannot be read is named, never skipped.
 */
async function otherPartsTensors(location: string, metadata: GgufMetadata, headers: Record<string, string>, timeoutMs: number | undefined): Promise<{ tensors: GgufTensor[]; parts: number }> {
  const count = Number(metadata["split.count"] ?? 1);
  if (!Number.isInteger(count) || count <= 1) return { tensors: [], parts: 1 };
  const name = parseGgufShardFilename(location);
  if (!name || Number(name.shard) !== 1 || Number(name.total) !== count) {
    throw sourceUnreadable(
      redactUrl(location),
      `is part of a GGUF split in ${count} parts (split.count ${count}), but its name is not the first of them (…-00001-of-${String(count).padStart(5, "0")}.gguf)`,
      "Give the first part's path or URL; the planner reads the others beside it.",
    );
  }
  const partLocations = Array.from({ length: count - 1 }, (_, index) => `${name.prefix}-${String(index + 2).padStart(5, "0")}-of-${name.total}.gguf`);
  const parsedParts = await mapLimited(partLocations, shardReadConcurrency, async (part) => {
    try {
      return await parseGguf(part, headers, timeoutMs);
    } catch (error) {
      throw sourceUnreadable(
        redactUrl(part),
        `is missing or unreadable (part of the ${count}-part GGUF ${redactUrl(location)}): ${error instanceof Error ? error.message : String(error)}`,
        "Download every part beside the first; the model's size is the sum of its parts.",
      );
    }
  });
  return { tensors: parsedParts.flatMap(tensorsOf), parts: count };
}

/** Facts from a GGUF file (every part of a split one), local or remote, read by @huggingface/gguf (header and tensor infos only). */
async function readGguf(source: string, location: string, headers: Record<string, string>, timeoutMs?: number): Promise<ModelFacts> {
  const parsed = await parseGguf(location, headers, timeoutMs);
  // The library types metadata per architecture; we read it by key name.
  const metadata = parsed.metadata as unknown as GgufMetadata;
  if (metadata["general.type"] === "adapter") {
    throw sourceUnreadable(
      redactUrl(location),
      `is a GGUF ${typeof metadata["adapter.type"] === "string" ? `${metadata["adapter.type"]} ` : ""}adapter, not a model`,
      "Give the base model's GGUF as the source, and attach the adapter under the model's adapters.",
    );
  }
  const others = await otherPartsTensors(location, metadata, headers, timeoutMs);
  const tensors = [...tensorsOf(parsed), ...others.tensors];
  const file = `GGUF metadata of ${location}`;
  const architecture = architectureFromGguf(metadata, tensors, file);
  const { parameters, bytes } = countGgufTensors(tensors, file);
  const fileType = ggufFileTypeName(metadata);
  const read = others.parts > 1 ? `tensor infos of all ${others.parts} parts of ${location} (${tensors.length} tensors)` : `tensor infos of ${location} (${tensors.length} tensors)`;
  return {
    source,
    architecture,
    parameters,
    checkpoint: { format: "gguf", dtype: fileType ?? "GGUF", bytes, quantization: undefined },
    ggufFileType: fileType,
    provenance: { architecture: file, parameters: read },
  };
}

export { defaultHubEndpoint };
