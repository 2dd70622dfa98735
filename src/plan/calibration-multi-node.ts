/**
 * Published figures of the models no single node of 80 GB cards holds, the
 * ones replicas over several nodes exist for. Checked by
 * src/plan/calibration-multi-node.test.ts against the config.json facts in
 * src/plan/fixtures (the models' own published config.json files).
 *
 * - parameters: what the model card or the hub's safetensors metadata
 *   publishes for the weights vLLM loads.
 * - storedBytes: model.safetensors.index.json total_size, in the checkpoint's
 *   own format (DeepSeek-V3 ships FP8 with 128×128 block scales; its index
 *   also holds the one multi-token-prediction layer, which vLLM loads only for
 *   speculative decoding and the tensor inventory leaves out — hence its
 *   wider tolerance).
 */
import type { Architecture } from "./architecture.js";
import { kvBytesPerToken } from "./kv-cache.js";
import { inventoryParameters, tensorInventory } from "./tensor-inventory.js";
import { weightsBytes, type GpuEngineQuantization } from "./weights.js";

export interface LargeModelEntry {
  readonly fixture: string;
  readonly huggingFaceId: string;
  readonly publishedParameters: number;
  readonly parametersSource: string;
  readonly stored?: { readonly quantization: GpuEngineQuantization; readonly bytes: number; readonly tolerance: number };
  readonly kvBytesPerToken: number;
}

export const parametersTolerance = 0.01;

export const largeModelTable: readonly LargeModelEntry[] = [
  {
    fixture: "DeepSeek-V3",
    huggingFaceId: "deepseek-ai/DeepSeek-V3",
    publishedParameters: 671e9,
    parametersSource: "model card: 671B main model weights (plus 14B of the multi-token-prediction module)",
    stored: { quantization: "fp8", bytes: 688_586_727_753, tolerance: 0.03 },
    kvBytesPerToken: 70_272, // MLA: 61 layers × (512 latent + 64 rope) × 2 bytes
  },
  {
    fixture: "Llama-3.1-405B",
    huggingFaceId: "meta-llama/Llama-3.1-405B",
    publishedParameters: 405_853_388_800,
    parametersSource: "safetensors metadata",
    stored: { quantization: "bf16", bytes: 811_706_777_600, tolerance: 0.01 },
    kvBytesPerToken: 516_096, // 2 × 126 layers × 8 KV heads × 128 × 2 bytes
  },
  {
    fixture: "Kimi-K2-Instruct",
    huggingFaceId: "moonshotai/Kimi-K2-Instruct",
    publishedParameters: 1_026.5e9,
    parametersSource: "safetensors metadata (1026.5B; the model card says 1T total, 32B activated)",
    kvBytesPerToken: 70_272, // MLA, as DeepSeek-V3: 61 × (512 + 64) × 2
  },
];

export interface LargeModelRow {
  readonly fixture: string;
  readonly quantity: "parameters" | "stored_bytes" | "kv_bytes_per_token";
  readonly predicted: number;
  readonly published: number;
  readonly error: number;
  readonly tolerance: number;
}

/** Predicted against published for every large model, from its config.json alone. */
export function largeModelRows(architectureOf: (fixture: string) => Architecture): LargeModelRow[] {
  return largeModelTable.flatMap((entry) => {
    const architecture = architectureOf(entry.fixture);
    const parameters = inventoryParameters(tensorInventory(architecture));
    const row = (quantity: LargeModelRow["quantity"], predicted: number, published: number, tolerance: number): LargeModelRow => ({
      fixture: entry.fixture,
      quantity,
      predicted,
      published,
      error: (predicted - published) / published,
      tolerance,
    });
    return [
      row("parameters", parameters, entry.publishedParameters, parametersTolerance),
      ...(entry.stored ? [row("stored_bytes", weightsBytes(architecture, parameters, entry.stored.quantization), entry.stored.bytes, entry.stored.tolerance)] : []),
      row("kv_bytes_per_token", kvBytesPerToken(architecture), entry.kvBytesPerToken, 0),
    ];
  });
}
