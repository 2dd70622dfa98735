import type { EngineName } from "../catalog/index.js";
import {
  type KvLayout,
  bytesNeededPerCard,
  runtimeOverheadBytes,
  type EngineKind,
  type ModelFacts,
  largestStageLayers,
  gpuEngineQuantizations,
  isGgufQuantization,
  type Quantization,
  sixteenBitQuantization,
  weightsPerCard,
} from "../plan/index.js";

/** What of a profile decides the bytes each card holds. */
export interface ProfileMemoryInput {
  readonly engine: EngineName;
  /** Cards per node. */
  readonly gpus: number;
  /** Nodes one replica spans; 1 when absent. */
  readonly nodes?: number;
  readonly quantization: string | undefined;
  /** llama.cpp's parallel slots: its KV cache holds every slot's full context. */
  readonly slots: number;
}

/** The vLLM quantisation methods that load 4-bit weights (AWQ and GPTQ checkpoints, bitsandbytes' default nf4). */
const fourBitMethods: readonly string[] = ["awq", "gptq", "awq_marlin", "gptq_marlin", "bitsandbytes"];

/**
 * The quantisation the planner prices a profile at, or undefined when it
 * cannot tell (compressed-tensors may hold int8, fp8 or int4; a GGUF type the
 * planner does not model on a safetensors source).
 */
function plannedQuantization(facts: ModelFacts, profile: ProfileMemoryInput): Quantization | undefined {
  // Stored weights are priced at their stored bytes whatever the profile says.
  if (facts.checkpoint.format === "gguf") return isGgufQuantization(facts.ggufFileType ?? "") ? (facts.ggufFileType as Quantization) : "F16";
  if (facts.checkpoint.quantization) return facts.checkpoint.quantization;
  const named = profile.quantization;
  if (named === undefined) return profile.engine === "llamacpp" ? undefined : sixteenBitQuantization(facts);
  if ((gpuEngineQuantizations as readonly string[]).includes(named)) return named as Quantization;
  if (fourBitMethods.includes(named)) return "int4";
  if (isGgufQuantization(named)) return named;
  return undefined;
}

/** What the busiest card of one replica holds, part by part, as the planner prices it. */
export interface CardBytes {
  readonly weights: number;
  readonly overhead: number;
  readonly kvCache: number;
  /** Tokens the KV cache is sized for: the context, times the slots for llama.cpp. */
  readonly kvTokens: number;
  readonly total: number;
}

/**
 * Bytes each card of one replica must hold: weights on the busiest card,
 * the engine's runtime overhead, and the KV cache for the model's context,
 * all by the planner's own functions (the numbers `ctl model plan` shows for
 * the same engine, cards and quantisation). Without a context, the engine's
 * own default: the context the model was trained for. llama.cpp holds every
 * slot's context at once.
 *
 * Undefined when there is nothing to price (a CPU profile, or ComfyUI, which
 * the planner does not model) or the quantisation is unknown; placement then
 * checks the card count alone.
 */
export function demandBytesPerCard(facts: ModelFacts, profile: ProfileMemoryInput, context: number | undefined): number | undefined {
  return demandCardBytes(facts, profile, context)?.total;
}

/** demandBytesPerCard part by part, for a refusal that says what each card would need. */
export function demandCardBytes(facts: ModelFacts, profile: ProfileMemoryInput, context: number | undefined): CardBytes | undefined {
  if (profile.gpus <= 0 || profile.engine === "comfyui") return undefined;
  const quantization = plannedQuantization(facts, profile);
  if (quantization === undefined) return undefined;
  // SGLang and TensorRT-LLM split tensors across cards as vLLM does.
  const engine: EngineKind = profile.engine === "llamacpp" ? "llamacpp" : "vllm";
  const kvLayout: KvLayout = engine === "vllm" ? "tensor_parallel" : "layer_split";
  // Over several nodes vLLM pipelines one stage per node; SGLang makes one tensor group of every card.
  const nodes = profile.nodes ?? 1;
  const stages = nodes > 1 && profile.engine === "vllm" ? nodes : 1;
  const tensor = nodes > 1 && profile.engine !== "vllm" ? profile.gpus * nodes : profile.gpus;
  const weights = weightsPerCard(facts, quantization, engine, tensor, false, stages);
  const tokens = (context ?? facts.architecture.trainedContext) * (engine === "llamacpp" ? Math.max(1, profile.slots) : 1);
  const budget = {
    architecture: facts.architecture,
    usableBytes: 0,
    weightsBytesPerCard: weights,
    overheadBytesPerCard: runtimeOverheadBytes(engine, weights, tensor * stages),
    cards: tensor,
    kvLayout,
    ...(stages > 1 ? { pipelineLayers: largestStageLayers(facts.architecture.layers, stages) } : {}),
  };
  const total = Math.ceil(bytesNeededPerCard(budget, tokens));
  return { weights, overhead: budget.overheadBytesPerCard, kvCache: total - weights - budget.overheadBytesPerCard, kvTokens: tokens, total };
}
