import { DomainError } from "../errors/domain-error.js";
import type { GpuEngineQuantization } from "./weights.js";

/**
 * Safetensors headers, parsed without I/O. A file starts with an 8-byte
 * little-endian header length, then that many bytes of JSON:
 * {"name": {"dtype": "BF16", "shape": [4096, 4096], "data_offsets": [a, b]}, "__metadata__": {...}}.
 */
export interface SafetensorsTensor {
  readonly name: string;
  readonly dtype: string;
  readonly shape: readonly number[];
}

/** Bytes per element of each safetensors dtype. */
export const safetensorsDtypeBytes: Readonly<Record<string, number>> = {
  F64: 8,
  I64: 8,
  U64: 8,
  F32: 4,
  I32: 4,
  U32: 4,
  F16: 2,
  BF16: 2,
  I16: 2,
  U16: 2,
  F8_E4M3: 1,
  F8_E5M2: 1,
  F8_E8M0: 1,
  I8: 1,
  U8: 1,
  BOOL: 1,
};

/** Headers larger than this are refused (the hub's own limit is 25 MB; MoE headers reach a few MB). */
export const maxSafetensorsHeaderBytes = 100_000_000;

export function safetensorsHeaderLength(prefix: Uint8Array, file: string): number {
  if (prefix.length < 8) throw unreadable(file, "is shorter than the 8-byte header length");
  const length = new DataView(prefix.buffer, prefix.byteOffset, 8).getBigUint64(0, true);
  if (length <= 0n || length > BigInt(maxSafetensorsHeaderBytes)) throw unreadable(file, `declares a header of ${length} bytes`);
  return Number(length);
}

export function parseSafetensorsHeader(json: Uint8Array | string, file: string): SafetensorsTensor[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(typeof json === "string" ? json : new TextDecoder().decode(json));
  } catch {
    throw unreadable(file, "has a header that is not JSON");
  }
  if (typeof parsed !== "object" || parsed === null) throw unreadable(file, "has a header that is not a JSON object");
  const tensors: SafetensorsTensor[] = [];
  for (const [name, value] of Object.entries(parsed)) {
    if (name === "__metadata__") continue;
    const entry = value as { dtype?: unknown; shape?: unknown };
    if (typeof entry.dtype !== "string" || !Array.isArray(entry.shape) || !entry.shape.every((dimension) => Number.isInteger(dimension))) {
      throw unreadable(file, `has a malformed entry for tensor ${name}`);
    }
    tensors.push({ name, dtype: entry.dtype, shape: entry.shape as number[] });
  }
  return tensors;
}

function unreadable(file: string, why: string): DomainError {
  return new DomainError("source_unreadable", `${file} ${why}`, "Check that the file is a complete safetensors file (re-download it if it was cut short).");
}

export interface WeightsCount {
  readonly parameters: number;
  readonly bytes: number;
  /** The dtype holding most bytes. */
  readonly dtype: string;
}

/**
 * Parameters and bytes of a checkpoint from its tensors.
 *
 * Pre-quantised checkpoints store packed weights: AWQ and GPTQ pack eight
 * 4-bit weights into each int32 of `qweight`, so those count × 32/bits, and
 * their scales, zero points and g_idx are bookkeeping, not parameters; FP8
 * checkpoints carry `*_scale` tensors beside each weight. Without this the
 * count of a 4-bit 70B checkpoint would read as 9 B.
 */
export function countWeights(tensors: readonly SafetensorsTensor[], quantization: PrequantizedFormat | undefined): WeightsCount {
  let parameters = 0;
  let bytes = 0;
  const bytesByDtype = new Map<string, number>();
  for (const tensor of tensors) {
    const elements = tensor.shape.reduce((product, dimension) => product * dimension, 1);
    const tensorBytes = elements * (safetensorsDtypeBytes[tensor.dtype] ?? 2);
    bytes += tensorBytes;
    bytesByDtype.set(tensor.dtype, (bytesByDtype.get(tensor.dtype) ?? 0) + tensorBytes);
    if (quantization?.method === "packed_int") {
      if (/\.(qzeros|scales|g_idx)$/.test(tensor.name)) continue;
      if (tensor.name.endsWith(".qweight")) {
        parameters += elements * (32 / quantization.bits);
        continue;
      }
    }
    if (quantization?.method === "fp8" && /_scale(_inv)?$/.test(tensor.name)) continue;
    parameters += elements;
  }
  let dtype = "BF16";
  let most = -1;
  for (const [name, total] of bytesByDtype) {
    if (total > most) {
      dtype = name;
      most = total;
    }
  }
  return { parameters, bytes, dtype };
}

/** What config.json's quantization_config says about packed weights. */
export interface PrequantizedFormat {
  readonly method: "packed_int" | "fp8" | "int8";
  readonly bits: number;
  readonly quantization: GpuEngineQuantization;
}

export function prequantizedFormat(config: unknown): PrequantizedFormat | undefined {
  if (typeof config !== "object" || config === null) return undefined;
  const quantizationConfig = (config as { quantization_config?: { quant_method?: unknown; bits?: unknown } }).quantization_config;
  if (!quantizationConfig || typeof quantizationConfig.quant_method !== "string") return undefined;
  const method = quantizationConfig.quant_method.toLowerCase();
  const bits = typeof quantizationConfig.bits === "number" ? quantizationConfig.bits : undefined;
  if (method === "awq" || method === "gptq") {
    if (bits === 8) return { method: "packed_int", bits: 8, quantization: "int8" };
    return { method: "packed_int", bits: bits ?? 4, quantization: "int4" };
  }
  if (method === "fp8" || method === "fbgemm_fp8") return { method: "fp8", bits: 8, quantization: "fp8" };
  if (method === "bitsandbytes" || method === "compressed-tensors") return { method: "int8", bits: 8, quantization: "int8" };
  return undefined;
}

/**
 * A shard name from an index is someone else's input: it must stay inside
 * the model's folder (no "..", no absolute path, no scheme), or a crafted
 * index on a mirror would make the server read local files or send the hub
 * token to another host.
 */
export function isSafeShardName(name: string): boolean {
  if (name.length === 0 || name.startsWith("/") || name.includes("\\") || /^[A-Za-z][A-Za-z0-9+.-]*:/.test(name)) return false;
  if ([...name].some((character) => character.charCodeAt(0) < 32)) return false;
  let decoded = name;
  try {
    decoded = decodeURIComponent(name);
  } catch {
    return false;
  }
  return ![name, decoded].some((candidate) => candidate.split("/").some((segment) => segment === ".." || segment === "."));
}

/**
 * The shard files an index names, in first-seen order (weight_map values).
 */
export function shardsOfIndex(index: unknown, file: string): { shards: string[]; totalSize: number | undefined } {
  const parsed = index as { weight_map?: unknown; metadata?: { total_size?: unknown } } | null;
  if (!parsed || typeof parsed.weight_map !== "object" || parsed.weight_map === null) throw unreadable(file, "has no weight_map");
  const shards: string[] = [];
  for (const shard of Object.values(parsed.weight_map as Record<string, unknown>)) {
    if (typeof shard !== "string") continue;
    if (!isSafeShardName(shard)) throw unreadable(file, `names a shard outside its folder ("${shard}")`);
    if (!shards.includes(shard)) shards.push(shard);
  }
  const total = parsed.metadata?.total_size;
  const totalSize = typeof total === "number" ? total : typeof total === "string" ? Number(total) : undefined;
  return { shards, totalSize: totalSize !== undefined && Number.isFinite(totalSize) ? totalSize : undefined };
}
