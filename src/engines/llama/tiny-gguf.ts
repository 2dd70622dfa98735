/**
 * A tiny llama-architecture GGUF that llama.cpp really loads and runs: a few
 * layers of small dimensions, random weights from a fixed seed, a byte-level
 * BPE vocabulary (GPT-2's 256 byte symbols, a few merges and ChatML's special
 * tokens) and a ChatML chat template. Tests, the bench and the demo's checks
 * serve real llama.cpp inference from it in a second, with no download.
 *
 * And LoRA adapters for it (general.type adapter, adapter.type lora), as
 * llama.cpp's convert_lora_to_gguf.py writes them: lora_a is [in, rank] and
 * lora_b [rank, out] in ggml order, beside the base tensor they change.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { dirname } from "node:path";

// gguf.h value types.
const valueType = { uint32: 4, int32: 5, float32: 6, bool: 7, string: 8, array: 9 } as const;
const ggmlF32 = 0;
const alignment = 32;

type MetadataValue =
  | { readonly kind: "uint32"; readonly value: number }
  | { readonly kind: "float32"; readonly value: number }
  | { readonly kind: "bool"; readonly value: boolean }
  | { readonly kind: "string"; readonly value: string }
  | { readonly kind: "strings"; readonly value: readonly string[] }
  | { readonly kind: "int32s"; readonly value: readonly number[] }
  | { readonly kind: "float32s"; readonly value: readonly number[] };

interface Tensor {
  readonly name: string;
  /** ggml order: ne0 (the row length) first. */
  readonly dimensions: readonly number[];
  readonly data: Float32Array;
}

class Writer {
  private readonly chunks: Buffer[] = [];
  length = 0;
  push(bytes: Buffer): void {
    this.chunks.push(bytes);
    this.length += bytes.length;
  }
  u32(value: number): void {
    const bytes = Buffer.alloc(4);
    bytes.writeUInt32LE(value);
    this.push(bytes);
  }
  i32(value: number): void {
    const bytes = Buffer.alloc(4);
    bytes.writeInt32LE(value);
    this.push(bytes);
  }
  u64(value: number): void {
    const bytes = Buffer.alloc(8);
    bytes.writeBigUInt64LE(BigInt(value));
    this.push(bytes);
  }
  f32(value: number): void {
    const bytes = Buffer.alloc(4);
    bytes.writeFloatLE(value);
    this.push(bytes);
  }
  string(value: string): void {
    const encoded = Buffer.from(value, "utf8");
    this.u64(encoded.length);
    this.push(encoded);
  }
  pad(): void {
    const padding = (alignment - (this.length % alignment)) % alignment;
    if (padding > 0) this.push(Buffer.alloc(padding));
  }
  bytes(): Buffer {
    return Buffer.concat(this.chunks, this.length);
  }
}

/** A GGUF v3 file with its tensor data, every tensor f32. */
export function ggufFile(metadata: Readonly<Record<string, MetadataValue>>, tensors: readonly Tensor[]): Buffer {
  const writer = new Writer();
  writer.push(Buffer.from("GGUF", "ascii"));
  writer.u32(3);
  writer.u64(tensors.length);
  writer.u64(Object.keys(metadata).length);
  for (const [key, entry] of Object.entries(metadata)) {
    writer.string(key);
    switch (entry.kind) {
      case "uint32":
        writer.u32(valueType.uint32);
        writer.u32(entry.value);
        break;
      case "float32":
        writer.u32(valueType.float32);
        writer.f32(entry.value);
        break;
      case "bool":
        writer.u32(valueType.bool);
        writer.push(Buffer.from([entry.value ? 1 : 0]));
        break;
      case "string":
        writer.u32(valueType.string);
        writer.string(entry.value);
        break;
      case "strings":
        writer.u32(valueType.array);
        writer.u32(valueType.string);
        writer.u64(entry.value.length);
        for (const item of entry.value) writer.string(item);
        break;
      case "int32s":
        writer.u32(valueType.array);
        writer.u32(valueType.int32);
        writer.u64(entry.value.length);
        for (const item of entry.value) writer.i32(item);
        break;
      case "float32s":
        writer.u32(valueType.array);
        writer.u32(valueType.float32);
        writer.u64(entry.value.length);
        for (const item of entry.value) writer.f32(item);
        break;
    }
  }
  let offset = 0;
  const offsets: number[] = [];
  for (const tensor of tensors) {
    writer.string(tensor.name);
    writer.u32(tensor.dimensions.length);
    for (const dimension of tensor.dimensions) writer.u64(dimension);
    writer.u32(ggmlF32);
    writer.u64(offset);
    offsets.push(offset);
    offset += Math.ceil((tensor.data.length * 4) / alignment) * alignment;
  }
  writer.pad();
  for (const tensor of tensors) {
    writer.push(Buffer.from(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength));
    writer.pad();
  }
  return writer.bytes();
}

/** mulberry32: a small seeded generator, so the same seed writes the same bytes. */
function generator(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomTensor(random: () => number, elements: number, scale: number): Float32Array {
  const data = new Float32Array(elements);
  for (let index = 0; index < elements; index += 1) data[index] = (random() * 2 - 1) * scale;
  return data;
}

/**
 * A matrix writing into the residual stream, with nothing written into its
 * dimension 0: that dimension stays the embeddings' constant, which the output
 * head reads to keep unspeakable tokens out (rowLength is the input width).
 */
function keepFirstDimension(data: Float32Array, rowLength: number): Float32Array {
  data.fill(0, 0, rowLength);
  return data;
}

/** GPT-2's bytes_to_unicode: every byte as a printable character, so a byte-level BPE vocabulary is all text. */
export function byteSymbols(): string[] {
  const printable = new Set<number>();
  for (let byte = 0x21; byte <= 0x7e; byte += 1) printable.add(byte);
  for (let byte = 0xa1; byte <= 0xac; byte += 1) printable.add(byte);
  for (let byte = 0xae; byte <= 0xff; byte += 1) printable.add(byte);
  const symbols: string[] = [];
  let extra = 0;
  for (let byte = 0; byte < 256; byte += 1) {
    symbols.push(String.fromCodePoint(printable.has(byte) ? byte : 256 + extra++));
  }
  return symbols;
}

export interface TinyModelShape {
  readonly embedding: number;
  readonly layers: number;
  readonly heads: number;
  readonly kvHeads: number;
  readonly feedForward: number;
  readonly contextLength: number;
}

export const tinyModelShape: TinyModelShape = { embedding: 64, layers: 2, heads: 4, kvHeads: 2, feedForward: 128, contextLength: 2048 };

/** ChatML, which the tiny model's vocabulary carries the special tokens of. */
export const tinyChatTemplate =
  "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

const merges: readonly (readonly [string, string])[] = [
  ["Ġ", "t"],
  ["h", "e"],
  ["i", "n"],
  ["e", "r"],
  ["a", "n"],
  ["o", "n"],
  ["Ġt", "he"],
  ["r", "e"],
];
const specialTokens = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] as const;

export interface TinyVocabulary {
  readonly tokens: readonly string[];
  readonly types: readonly number[];
  readonly merges: readonly string[];
  readonly endOfText: number;
  readonly endOfTurn: number;
}

export function tinyVocabulary(): TinyVocabulary {
  const tokens = [...byteSymbols(), ...merges.map(([left, right]) => left + right), ...specialTokens];
  // llama_token_type: 1 normal, 3 control.
  const types = tokens.map((_, index) => (index >= tokens.length - specialTokens.length ? 3 : 1));
  return {
    tokens,
    types,
    merges: merges.map(([left, right]) => `${left} ${right}`),
    endOfText: tokens.length - 3,
    endOfTurn: tokens.length - 1,
  };
}

/**
 * Whether the tiny model may say a token: printable ASCII, newline and the
 * merges. The others (control tokens, lone bytes of multi-byte characters)
 * get a strongly negative logit, so answers are readable text and never end
 * before max_tokens.
 */
function speakable(token: string, index: number, vocabulary: TinyVocabulary): boolean {
  if (vocabulary.types[index] !== 1) return false;
  if (index >= 256) return true;
  return (index >= 0x20 && index <= 0x7e) || index === 0x0a ? true : token === "Ġ";
}

export interface TinyModelOptions {
  readonly seed?: number;
  readonly name?: string;
  readonly shape?: TinyModelShape;
}

/** The tiny chat model's GGUF bytes. */
export function tinyModelGguf(options: TinyModelOptions = {}): Buffer {
  const shape = options.shape ?? tinyModelShape;
  const random = generator(options.seed ?? 42);
  const vocabulary = tinyVocabulary();
  const vocab = vocabulary.tokens.length;
  const headDimension = shape.embedding / shape.heads;
  const kvWidth = headDimension * shape.kvHeads;
  const ones = (length: number): Float32Array => new Float32Array(length).fill(1);
  // Dimension 0 of every embedding is a constant the layers barely move, and the output head reads it
  // as "speakable or not": a fixed direction that keeps control tokens and stray bytes out of answers.
  const embeddings = randomTensor(random, shape.embedding * vocab, 1);
  for (let token = 0; token < vocab; token += 1) embeddings[token * shape.embedding] = 16;
  const output = randomTensor(random, shape.embedding * vocab, 1);
  vocabulary.tokens.forEach((token, index) => {
    output[index * shape.embedding] = speakable(token, index, vocabulary) ? 2 : -8;
  });
  const tensors: Tensor[] = [
    { name: "token_embd.weight", dimensions: [shape.embedding, vocab], data: embeddings },
    { name: "output_norm.weight", dimensions: [shape.embedding], data: ones(shape.embedding) },
    { name: "output.weight", dimensions: [shape.embedding, vocab], data: output },
  ];
  const layerScale = 0.3;
  for (let layer = 0; layer < shape.layers; layer += 1) {
    const block = (name: string, dimensions: number[], data: Float32Array): void => {
      tensors.push({ name: `blk.${layer}.${name}.weight`, dimensions, data });
    };
    block("attn_norm", [shape.embedding], ones(shape.embedding));
    block("attn_q", [shape.embedding, shape.embedding], randomTensor(random, shape.embedding * shape.embedding, layerScale));
    block("attn_k", [shape.embedding, kvWidth], randomTensor(random, shape.embedding * kvWidth, layerScale));
    block("attn_v", [shape.embedding, kvWidth], randomTensor(random, shape.embedding * kvWidth, layerScale));
    block("attn_output", [shape.embedding, shape.embedding], keepFirstDimension(randomTensor(random, shape.embedding * shape.embedding, layerScale), shape.embedding));
    block("ffn_norm", [shape.embedding], ones(shape.embedding));
    block("ffn_gate", [shape.embedding, shape.feedForward], randomTensor(random, shape.embedding * shape.feedForward, layerScale));
    block("ffn_up", [shape.embedding, shape.feedForward], randomTensor(random, shape.embedding * shape.feedForward, layerScale));
    block("ffn_down", [shape.feedForward, shape.embedding], keepFirstDimension(randomTensor(random, shape.feedForward * shape.embedding, layerScale), shape.feedForward));
  }
  return ggufFile(
    {
      "general.architecture": { kind: "string", value: "llama" },
      "general.type": { kind: "string", value: "model" },
      "general.name": { kind: "string", value: options.name ?? "llmgw tiny llama" },
      "general.file_type": { kind: "uint32", value: 0 },
      "llama.context_length": { kind: "uint32", value: shape.contextLength },
      "llama.embedding_length": { kind: "uint32", value: shape.embedding },
      "llama.block_count": { kind: "uint32", value: shape.layers },
      "llama.feed_forward_length": { kind: "uint32", value: shape.feedForward },
      "llama.attention.head_count": { kind: "uint32", value: shape.heads },
      "llama.attention.head_count_kv": { kind: "uint32", value: shape.kvHeads },
      "llama.attention.layer_norm_rms_epsilon": { kind: "float32", value: 1e-5 },
      "llama.rope.dimension_count": { kind: "uint32", value: headDimension },
      "llama.rope.freq_base": { kind: "float32", value: 10000 },
      "llama.vocab_size": { kind: "uint32", value: vocab },
      "tokenizer.ggml.model": { kind: "string", value: "gpt2" },
      "tokenizer.ggml.pre": { kind: "string", value: "gpt-2" },
      "tokenizer.ggml.tokens": { kind: "strings", value: vocabulary.tokens },
      "tokenizer.ggml.token_type": { kind: "int32s", value: vocabulary.types },
      "tokenizer.ggml.merges": { kind: "strings", value: vocabulary.merges },
      "tokenizer.ggml.bos_token_id": { kind: "uint32", value: vocabulary.endOfText },
      "tokenizer.ggml.eos_token_id": { kind: "uint32", value: vocabulary.endOfTurn },
      "tokenizer.ggml.padding_token_id": { kind: "uint32", value: vocabulary.endOfText },
      "tokenizer.ggml.add_bos_token": { kind: "bool", value: false },
      "tokenizer.chat_template": { kind: "string", value: tinyChatTemplate },
    },
    tensors,
  );
}

export interface TinyLoraOptions {
  /** The architecture the adapter says it is for; "llama" fits the tiny model. */
  readonly architecture?: string;
  readonly seed?: number;
  readonly rank?: number;
  readonly alpha?: number;
  readonly shape?: TinyModelShape;
}

/**
 * A LoRA for the tiny model on every layer's attn_output and ffn_down, with
 * weights large enough that it changes what the model says.
 */
export function tinyLoraGguf(options: TinyLoraOptions = {}): Buffer {
  const shape = options.shape ?? tinyModelShape;
  const rank = options.rank ?? 4;
  const random = generator(options.seed ?? 7);
  const tensors: Tensor[] = [];
  for (let layer = 0; layer < shape.layers; layer += 1) {
    for (const [name, input, outputWidth] of [
      ["attn_output", shape.embedding, shape.embedding],
      ["ffn_down", shape.feedForward, shape.embedding],
    ] as const) {
      tensors.push({ name: `blk.${layer}.${name}.weight.lora_a`, dimensions: [input, rank], data: randomTensor(random, input * rank, 1) });
      tensors.push({ name: `blk.${layer}.${name}.weight.lora_b`, dimensions: [rank, outputWidth], data: keepFirstDimension(randomTensor(random, rank * outputWidth, 1), rank) });
    }
  }
  return ggufFile(
    {
      "general.architecture": { kind: "string", value: options.architecture ?? "llama" },
      "general.type": { kind: "string", value: "adapter" },
      "general.name": { kind: "string", value: "llmgw tiny lora" },
      "adapter.type": { kind: "string", value: "lora" },
      "adapter.lora.alpha": { kind: "float32", value: options.alpha ?? rank },
    },
    tensors,
  );
}

/** Writes `bytes` to `file`, making its folder. */
export async function writeGgufFile(file: string, bytes: Buffer): Promise<string> {
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, bytes);
  return file;
}
