/**
 * Checkpoints with real headers and no weights. The planner reads only
 * headers, so a safetensors file that stops after its header, or a GGUF file
 * that stops after its tensor infos, is all the tests and `llmgw demo` need
 * to exercise the readers on a 70B layout without 140 GB of disk.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { Architecture } from "./architecture.js";
import { ggmlTypes, type GgmlTypeName } from "../catalog/index.js";
import { safetensorsDtypeBytes, type SafetensorsTensor } from "./safetensors.js";
import { tensorInventory, type InventoryTensor } from "./tensor-inventory.js";
import { ggufTensorType, type GgufQuantization } from "./weights.js";

/** One tensor per expert, as transformers checkpoints store them (Mixtral, Qwen3-MoE, DeepSeek). */
export function checkpointTensors(architecture: Architecture, dtype = "BF16"): SafetensorsTensor[] {
  const tensors: SafetensorsTensor[] = [];
  for (const tensor of tensorInventory(architecture)) {
    if (tensor.shape.length === 3) {
      const [experts = 0, rows = 0, columns = 0] = tensor.shape;
      const [prefix, projection] = tensor.name.split(".experts.") as [string, string];
      for (let expert = 0; expert < experts; expert += 1) {
        tensors.push({ name: `${prefix}.experts.${expert}.${projection}`, dtype, shape: [rows, columns] });
      }
    } else {
      tensors.push({ name: tensor.name, dtype, shape: [...tensor.shape] });
    }
  }
  return tensors;
}

/** A safetensors file's first bytes: the 8-byte length and the JSON header (offsets as if the data followed). */
export function safetensorsHeaderBytes(tensors: readonly SafetensorsTensor[]): Uint8Array {
  const header: Record<string, unknown> = { __metadata__: { format: "pt" } };
  let offset = 0;
  for (const tensor of tensors) {
    const bytes = tensor.shape.reduce((product, dimension) => product * dimension, 1) * (safetensorsDtypeBytes[tensor.dtype] ?? 2);
    header[tensor.name] = { dtype: tensor.dtype, shape: tensor.shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  const json = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(8 + json.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  return out;
}

/**
 * A model folder: config.json, and the tensors split over `shards` header-only
 * safetensors files with an index (or one model.safetensors when shards is 1).
 */
export async function writeSyntheticCheckpoint(
  folder: string,
  config: unknown,
  tensors: readonly SafetensorsTensor[],
  shards: number,
): Promise<void> {
  await mkdir(folder, { recursive: true });
  await writeFile(join(folder, "config.json"), JSON.stringify(config, null, 2));
  if (shards === 1) {
    await writeFile(join(folder, "model.safetensors"), safetensorsHeaderBytes(tensors));
    return;
  }
  const perShard = Math.ceil(tensors.length / shards);
  const weightMap: Record<string, string> = {};
  let totalSize = 0;
  for (let shard = 0; shard < shards; shard += 1) {
    const name = `model-${String(shard + 1).padStart(5, "0")}-of-${String(shards).padStart(5, "0")}.safetensors`;
    const part = tensors.slice(shard * perShard, (shard + 1) * perShard);
    for (const tensor of part) {
      weightMap[tensor.name] = name;
      totalSize += tensor.shape.reduce((product, dimension) => product * dimension, 1) * (safetensorsDtypeBytes[tensor.dtype] ?? 2);
    }
    await writeFile(join(folder, name), safetensorsHeaderBytes(part));
  }
  await writeFile(join(folder, "model.safetensors.index.json"), JSON.stringify({ metadata: { total_size: totalSize }, weight_map: weightMap }));
}

// GGUF value types (gguf.h).
const ggufUint32 = 4;
const ggufFloat32 = 6;
const ggufString = 8;
const ggufArray = 9;

export type GgufValue = number | string | string[] | { readonly float: number };

class ByteWriter {
  private chunks: Uint8Array[] = [];
  length = 0;
  private push(bytes: Uint8Array): void {
    this.chunks.push(bytes);
    this.length += bytes.length;
  }
  u32(value: number): void {
    const bytes = new Uint8Array(4);
    new DataView(bytes.buffer).setUint32(0, value, true);
    this.push(bytes);
  }
  u64(value: number | bigint): void {
    const bytes = new Uint8Array(8);
    new DataView(bytes.buffer).setBigUint64(0, BigInt(value), true);
    this.push(bytes);
  }
  f32(value: number): void {
    const bytes = new Uint8Array(4);
    new DataView(bytes.buffer).setFloat32(0, value, true);
    this.push(bytes);
  }
  string(value: string): void {
    const encoded = new TextEncoder().encode(value);
    this.u64(encoded.length);
    this.push(encoded);
  }
  raw(bytes: Uint8Array): void {
    this.push(bytes);
  }
  bytes(): Uint8Array {
    const out = new Uint8Array(this.length);
    let offset = 0;
    for (const chunk of this.chunks) {
      out.set(chunk, offset);
      offset += chunk.length;
    }
    return out;
  }
}

export interface GgufTensorSpec {
  readonly name: string;
  /** GGUF order: ne0 (row length) first. */
  readonly dimensions: readonly number[];
  readonly type: GgmlTypeName;
}

/** A GGUF v3 file: header, metadata, tensor infos and alignment padding; no tensor data. */
export function ggufHeaderBytes(metadata: Readonly<Record<string, GgufValue>>, tensors: readonly GgufTensorSpec[]): Uint8Array {
  const writer = new ByteWriter();
  writer.raw(new TextEncoder().encode("GGUF"));
  writer.u32(3);
  writer.u64(tensors.length);
  writer.u64(Object.keys(metadata).length);
  for (const [key, value] of Object.entries(metadata)) {
    writer.string(key);
    if (typeof value === "string") {
      writer.u32(ggufString);
      writer.string(value);
    } else if (Array.isArray(value)) {
      writer.u32(ggufArray);
      writer.u32(ggufString);
      writer.u64(value.length);
      for (const item of value) writer.string(item);
    } else if (typeof value === "number") {
      writer.u32(ggufUint32);
      writer.u32(value);
    } else {
      writer.u32(ggufFloat32);
      writer.f32(value.float);
    }
  }
  let offset = 0;
  for (const tensor of tensors) {
    writer.string(tensor.name);
    writer.u32(tensor.dimensions.length);
    for (const dimension of tensor.dimensions) writer.u64(dimension);
    writer.u32(ggmlTypes[tensor.type].id);
    writer.u64(offset);
    const elements = tensor.dimensions.reduce((product, dimension) => product * dimension, 1);
    const layout = ggmlTypes[tensor.type];
    offset += Math.ceil((Math.ceil(elements / layout.blockSize) * layout.blockBytes) / 32) * 32;
  }
  const padding = (32 - (writer.length % 32)) % 32;
  writer.raw(new Uint8Array(padding));
  return writer.bytes();
}

const ggufNames: Partial<Record<InventoryTensor["role"], string>> = {
  attn_q: "attn_q",
  attn_k: "attn_k",
  attn_v: "attn_v",
  attn_output: "attn_output",
  ffn_gate: "ffn_gate",
  ffn_up: "ffn_up",
  ffn_down: "ffn_down",
  ffn_gate_exps: "ffn_gate_exps",
  ffn_up_exps: "ffn_up_exps",
  ffn_down_exps: "ffn_down_exps",
  ffn_gate_inp: "ffn_gate_inp",
};

/**
 * The GGUF llama-quantize would write for a Llama-family architecture at
 * `quantization`, as metadata plus tensor infos. Norms are named by index so
 * every tensor name stays unique.
 */
export function syntheticGguf(architecture: Architecture, quantization: GgufQuantization, fileType: number): Uint8Array {
  return syntheticGgufParts(architecture, quantization, fileType, 1)[0] as Uint8Array;
}

/**
 * The same model as `llama-gguf-split` would publish it in `parts` files
 * (`…-00001-of-0000N.gguf`): the first part carries every metadata key, each
 * part its share of the tensors and the `split.*` keys.
 */
export function syntheticGgufParts(architecture: Architecture, quantization: GgufQuantization, fileType: number, parts: number): Uint8Array[] {
  const arch = architecture.modelType;
  const metadata: Record<string, GgufValue> = {
    "general.architecture": arch,
    "general.file_type": fileType,
    [`${arch}.block_count`]: architecture.layers,
    [`${arch}.context_length`]: architecture.trainedContext,
    [`${arch}.embedding_length`]: architecture.hiddenSize,
    [`${arch}.feed_forward_length`]: architecture.intermediateSize ?? 0,
    [`${arch}.attention.head_count`]: architecture.attentionHeads,
    [`${arch}.attention.head_count_kv`]: architecture.kvHeads,
    [`${arch}.rope.freq_base`]: { float: 500000 },
    [`${arch}.vocab_size`]: architecture.vocabSize,
  };
  // llama.cpp writes the head size whenever it is not hidden / heads (Qwen3: 128 against 1024 / 16);
  // without it a reader takes hidden / heads and miscounts every attention tensor.
  if (!architecture.mla && architecture.headDim !== architecture.hiddenSize / architecture.attentionHeads) {
    metadata[`${arch}.attention.key_length`] = architecture.headDim;
    metadata[`${arch}.attention.value_length`] = architecture.headDim;
  }
  if (architecture.moe) {
    metadata[`${arch}.expert_count`] = architecture.moe.experts;
    metadata[`${arch}.expert_used_count`] = architecture.moe.expertsPerToken;
  }
  const tensors: GgufTensorSpec[] = tensorInventory(architecture).map((tensor, index) => {
    const role = ggufNames[tensor.role];
    const name =
      tensor.role === "token_embd"
        ? "token_embd.weight"
        : tensor.role === "output"
          ? "output.weight"
          : role && tensor.layer !== undefined
            ? `blk.${tensor.layer}.${role}.weight`
            : `extra.${index}.weight`;
    return { name, dimensions: [...tensor.shape].reverse(), type: ggufTensorType(quantization, tensor, architecture) };
  });
  if (parts === 1) return [ggufHeaderBytes(metadata, tensors)];
  const perPart = Math.ceil(tensors.length / parts);
  return Array.from({ length: parts }, (_, part) => {
    const split = { "split.no": part, "split.count": parts, "split.tensors.count": tensors.length };
    return ggufHeaderBytes(part === 0 ? { ...metadata, ...split } : split, tensors.slice(part * perPart, (part + 1) * perPart));
  });
}

export async function writeBytes(path: string, bytes: Uint8Array): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, bytes);
}
