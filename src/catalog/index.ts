/** The catalog folder's face: what other folders of src/ use from it. */
export { type Actor, describeActor } from "./actor.js";
export { type PlacedEntry, buildCatalog, type Catalog } from "./build-catalog.js";
export { cacheRoutingFromWire, type CacheRoutingWeights, defaultCacheRoutingWeights, cacheRoutingOnWire } from "./cache-routing.js";
export { type CatalogModel, type ResolvedProfile, type Scaling, resolveModel, resolveProfiles, notMultiNode } from "./catalog-model.js";
export { comfyTask, splitInputPath, type ComfyInputName, comfyOutputs, type ComfySettings } from "./comfy-schema.js";
export { formatDuration } from "./duration.js";
export { entryAtRevision, revisionedRepo } from "./entry-at-revision.js";
export { ggmlTensorBytes, ggmlTypeById, ggufFileTypes, ggmlTypes, type GgmlTypeName, bitsPerWeight } from "./ggml-types.js";
export { parseModelFile } from "./model-file.js";
export { parseMoment } from "./parse-moment.js";
export type { Preset } from "./presets/preset-schema.js";
export { shippedPresets } from "./presets/shipped-presets.js";
export { profilePosition } from "./profile-position.js";
export type { ReconcileSettings } from "./reconcile-settings.js";
export {
  redactArgs,
  redactUrl,
  redactStrings,
  type Audience,
  redactOutputLine,
  redactEntry,
  redactProfile,
  redactAuditValue,
  secretValuesOf,
} from "./redact.js";
export {
  type ModelEntry,
  adapterSchema,
  modelEntrySchema,
  profileSchema,
  scalingSchema,
  modelNameSchema,
  type externalSchema,
  adapterEngines,
  type ProfileInput,
  gpuOnlyEngines,
  maxNodesPerReplica,
  multiNodeEngines,
  singleCardEngines,
} from "./schema.js";
export { describeIssues, parseWithSchema } from "./schema-errors.js";
export { checkSecretEnv, maskSecretEnv, resolveSecretEnv } from "./secret-env.js";
export { parseListen, loadServerConfig, redactDatabaseUrl, type ServerConfig, type ServerOverrides } from "./server-config.js";
export { keyMaxInFlightSchema, type LimitsInput, limitsFromText, defaultServerLimits, formatBytes, type ServerLimits } from "./server-limits.js";
export { parseWeightsSource, type WeightsSource, sourceForAgents, describeSource, type SourceContext, sourceGrammarHint } from "./weights-source.js";
export { parseYamlSource } from "./yaml-source.js";
export * from "./light.js";
export { comfyPresetForSource } from "./presets/comfy-preset-for-source.js";
