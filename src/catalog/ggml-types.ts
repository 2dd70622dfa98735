/**
 * ggml's block layouts: how many bytes a block of weights takes. Bits per
 * weight follow from them exactly, e.g. Q8_0 = 34 bytes per 32 weights
 * (32 int8 + one fp16 scale) = 8.5 bpw; Q4_K = 144 bytes per 256 = 4.5 bpw;
 * Q6_K = 210 / 256 = 6.5625 bpw; IQ4_XS = 136 / 256 = 4.25 bpw.
 * Source: ggml/src/ggml-common.h (block_q8_0, block_q4_K, ...) and the
 * type_traits table in ggml.c. Keys are GGUF tensor type names; ids are
 * the GGMLQuantizationType numbers stored in GGUF tensor infos.
 */
export interface GgmlType {
  readonly id: number;
  readonly blockSize: number;
  readonly blockBytes: number;
}

export const ggmlTypes = {
  F32: { id: 0, blockSize: 1, blockBytes: 4 },
  F16: { id: 1, blockSize: 1, blockBytes: 2 },
  Q4_0: { id: 2, blockSize: 32, blockBytes: 18 },
  Q4_1: { id: 3, blockSize: 32, blockBytes: 20 },
  Q5_0: { id: 6, blockSize: 32, blockBytes: 22 },
  Q5_1: { id: 7, blockSize: 32, blockBytes: 24 },
  Q8_0: { id: 8, blockSize: 32, blockBytes: 34 },
  Q8_1: { id: 9, blockSize: 32, blockBytes: 36 },
  Q2_K: { id: 10, blockSize: 256, blockBytes: 84 },
  Q3_K: { id: 11, blockSize: 256, blockBytes: 110 },
  Q4_K: { id: 12, blockSize: 256, blockBytes: 144 },
  Q5_K: { id: 13, blockSize: 256, blockBytes: 176 },
  Q6_K: { id: 14, blockSize: 256, blockBytes: 210 },
  Q8_K: { id: 15, blockSize: 256, blockBytes: 292 },
  IQ2_XXS: { id: 16, blockSize: 256, blockBytes: 66 },
  IQ2_XS: { id: 17, blockSize: 256, blockBytes: 74 },
  IQ3_XXS: { id: 18, blockSize: 256, blockBytes: 98 },
  IQ1_S: { id: 19, blockSize: 256, blockBytes: 50 },
  IQ4_NL: { id: 20, blockSize: 32, blockBytes: 18 },
  IQ3_S: { id: 21, blockSize: 256, blockBytes: 110 },
  IQ2_S: { id: 22, blockSize: 256, blockBytes: 82 },
  IQ4_XS: { id: 23, blockSize: 256, blockBytes: 136 },
  I8: { id: 24, blockSize: 1, blockBytes: 1 },
  I16: { id: 25, blockSize: 1, blockBytes: 2 },
  I32: { id: 26, blockSize: 1, blockBytes: 4 },
  I64: { id: 27, blockSize: 1, blockBytes: 8 },
  F64: { id: 28, blockSize: 1, blockBytes: 8 },
  IQ1_M: { id: 29, blockSize: 256, blockBytes: 56 },
  BF16: { id: 30, blockSize: 1, blockBytes: 2 },
} as const satisfies Record<string, GgmlType>;

export type GgmlTypeName = keyof typeof ggmlTypes;

export function bitsPerWeight(type: GgmlTypeName): number {
  const layout = ggmlTypes[type];
  return (layout.blockBytes * 8) / layout.blockSize;
}

/** Bytes of a tensor of `elements` weights stored as `type` (whole blocks). */
export function ggmlTensorBytes(type: GgmlTypeName, elements: number): number {
  const layout = ggmlTypes[type];
  return Math.ceil(elements / layout.blockSize) * layout.blockBytes;
}

export function ggmlTypeById(id: number): GgmlTypeName | undefined {
  for (const [name, layout] of Object.entries(ggmlTypes)) {
    if (layout.id === id) return name as GgmlTypeName;
  }
  return undefined;
}

/**
 * general.file_type (llama_ftype) numbers to the names people write
 * ("Q4_K_M"). From llama.h's enum llama_ftype.
 */
export const ggufFileTypes: Readonly<Record<number, string>> = {
  0: "F32",
  1: "F16",
  2: "Q4_0",
  3: "Q4_1",
  7: "Q8_0",
  8: "Q5_0",
  9: "Q5_1",
  10: "Q2_K",
  11: "Q3_K_S",
  12: "Q3_K_M",
  13: "Q3_K_L",
  14: "Q4_K_S",
  15: "Q4_K_M",
  16: "Q5_K_S",
  17: "Q5_K_M",
  18: "Q6_K",
  19: "IQ2_XXS",
  20: "IQ2_XS",
  21: "Q2_K_S",
  22: "IQ3_XS",
  23: "IQ3_XXS",
  24: "IQ1_S",
  25: "IQ4_NL",
  26: "IQ3_S",
  27: "IQ3_M",
  28: "IQ2_S",
  29: "IQ2_M",
  30: "IQ4_XS",
  31: "IQ1_M",
  32: "BF16",
};
