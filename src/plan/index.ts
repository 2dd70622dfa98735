/**
 * The planner's public surface. The server's GET /api/v1/plan,
 * `ctl model plan`, `model gpus`, `model context`, placement and the console
 * call these; everything but readModelSource is pure.
 */
export { planSource, type PlanSourceOptions } from "./plan-source.js";
export { readModelSource, maxShardHeadersRead, type ReadModelSourceOptions } from "./read-model-source.js";
export { defaultHubEndpoint, type ModelFiles } from "./model-files.js";
export type { ModelFacts, CheckpointFacts, Provenance } from "./model-facts.js";
export {
  architectureFromConfig,
  trainedContextFromConfig,
  type Architecture,
  type MixtureOfExperts,
  type MultiHeadLatentAttention,
  type SlidingWindow,
} from "./architecture.js";
export { architectureFromGguf, countGgufTensors, ggufFileTypeName } from "./gguf-architecture.js";
export {
  planCandidates,
  cardCounts,
  type Plan,
  type PlanArchitecture,
  type PlanCandidate,
  type PlanOptions,
  type PlanPool,
} from "./candidates.js";
export { renderPlanTable, type RenderOptions } from "./render-plan-table.js";
export { splitsHeads, splitsHeadsReason } from "./splits-heads.js";
export {
  kvBytesPerToken,
  kvBytesPerTokenPerLayer,
  kvCacheBytes,
  kvCacheBytesPerCard,
  kvReplication,
  defaultKvBytesPerElement,
  type KvLayout,
} from "./kv-cache.js";
export {
  usableBytes,
  runtimeOverheadBytes,
  maxContext,
  bytesLeftForKv,
  bytesNeededPerCard,
  defaultGpuMemoryUtilization,
  minimumUsefulContext,
  type ContextBudget,
  type EngineKind,
} from "./memory.js";
export {
  weightsBytes,
  weightsBytesPerCardTensorParallel,
  weightsBytesPerCardLayerSplit,
  ggufTensorType,
  usesMoreBits,
  gpuEngineQuantizations,
  ggufQuantizationsPlanned,
  int4BitsPerWeight,
  isGgufQuantization,
  type GpuEngineQuantization,
  type GgufQuantization,
  type Quantization,
} from "./weights.js";
export { bitsPerWeight, ggmlTypes, ggufFileTypes, type GgmlTypeName } from "../catalog/index.js";
export { tensorInventory, type InventoryTensor, type TensorRole, type TensorSplit } from "./tensor-inventory.js";
export { formatGiB, formatContext } from "./format.js";
export { calibrationTable, calibrationRows, bf16Tolerance, ggufTolerance, type CalibrationEntry, type CalibrationRow } from "./calibration.js";
export { checkEntrySources, defaultSourceCheckTimeoutMs } from "./check-sources.js";
export { checkpointTensors, syntheticGgufParts, writeBytes, writeSyntheticCheckpoint } from "./header-only-checkpoint.js";
export {
  readMirrorManifest,
  hubMirrorPath,
  mirrorKey,
  mirrorManifestName,
  parseMirrorManifest,
  type MirrorManifest,
  type MirroredSource,
  entryFromMirror,
} from "./mirror-manifest.js";
export { serverHubSettings, connectionFailure } from "./model-files.js";
export { largestStageLayers } from "./pipeline.js";
export { adapterRefusal, readAdapter, type AdapterBase, type AdapterFacts } from "./read-adapter.js";
export { readFileSize } from "./read-file-size.js";
export { resolveHubRevision } from "./resolve-hub-revision.js";
export { sixteenBitQuantization, weightsPerCard } from "./weights-per-card.js";
export * from "./light.js";
export { chooseServeEntry } from "./serve-entry.js";
export { safetensorsHeaderBytes } from "./header-only-checkpoint.js";
export type { SafetensorsTensor } from "./safetensors.js";
