/** The protocol folder's face: what other folders of src/ use from it. */
export type { AdapterChangeView, AdaptersView } from "./adapter-views.js";
export {
  nodeNameSchema,
  replicaProgressSchema,
  replicaSpecSchema,
  replicaStates,
  protocolRefusal,
  protocolVersion,
  replicaIdSchema,
  runtimeAdapterLoadSchema,
  runtimeAdapterUnloadSchema,
  startFetchRequestSchema,
  startReplicaRequestSchema,
  terminalReplicaStates,
  type Inventory,
  type CardInventory,
  type LlamaCppInventory,
  type ReplicaSpec,
  type ReplicaState,
  type ReplicaStatus,
  type DistributedSpec,
  fabricNetworkSchema,
  type FabricNetwork,
  type ReplicaProgress,
  agentPaths,
  heartbeatResponseSchema,
  joinResponseSchema,
  serverIdentitySchema,
  type HeartbeatRequest,
  type HeartbeatResponse,
  type JoinRequest,
  type JoinResponse,
  type ServerIdentity,
  maxFetchesListed,
  type FetchStatus,
  heartbeatRequestSchema,
  joinRequestSchema,
  fetchAnswerSchema,
  fetchListSchema,
  replicaAnswerSchema,
  inventorySchema,
  labelsSchema,
  replicaStatusSchema,
} from "./agent-protocol.js";
export { negotiateApiVersion, parseApiRange, serverApiRange } from "./api-version.js";
export { armCountsReportSchema, type ArmSlotReport } from "./arm-counts-feed.js";
export type { ArmView, CanaryView, ArmCounts, ArmName, CanaryState } from "./canary-views.js";
export {
  catalogExportSchema,
  type CatalogExport,
  type CatalogImportResult,
  catalogExportVersion,
  type ExportedKey,
  type ExportedToken,
} from "./catalog-export.js";
export { renderExport } from "./catalog-export-yaml.js";
export {
  cardMemoryAnswerSchema,
  type CardMemoryAnswer,
  headroomViewSchema,
  type HeadroomView,
  seriesViewSchema,
  type SeriesView,
  seriesStepSeconds,
  type SeriesPoint,
  sessionViewSchema,
  type SessionView,
  seriesSteps,
  type PlannedMemoryView,
  type StreamChange,
  type StreamTopic,
} from "./console.js";
export { dryRunParameter, dryRunQuerySchema, type Change, dryRunAnswer, type DryRunAnswer, dryRunAnswerSchema } from "./dry-run.js";
export { engineServes, type ExtraRoute, enginesServing, extraRoutes, replicaServesMessages, poolingRunner } from "./engine-routes.js";
export { readErrorBody } from "./error-body.js";
export type { EventKind } from "./event-kinds.js";
export {
  usageBatchSchema,
  type GatewayKeyFeedEntry,
  usageMinute,
  gatewayKeyFeedSchema,
  usageRow,
  type GatewayKey,
  type UsageBatch,
  type UsageIncrement,
  usageBatchLimit,
} from "./gateway-keys-feed.js";
export type { GatewayKeyState, UsageAnswer, GatewayKeyView, GatewayKeyCreated } from "./gateway-views.js";
export {
  metricsAnswerSchema,
  limitsVerdictsSchema,
  type LimitsBatch,
  type MetricsRequest,
  type LimitsVerdicts,
  limitsBatchSchema,
  metricsRequestSchema,
  type MetricsAnswer,
} from "./gateway-worker-messages.js";
export { statusForCode } from "./http-status.js";
export { flagSchema, isSet, logsQuerySchema } from "./logs-query.js";
export type { ModelChangeSettings, ModelChangeView, ArgumentChange, ProfileArgumentChanges, StoredFiguresView } from "./model-change-view.js";
export type { OpenAIErrorBody } from "./openai-error-body.js";
export type { PullView, PullNodeView, PullSkippedView, PullSourceView } from "./pull-views.js";
export {
  routingLongPollMs,
  type RoutingTable,
  type RoutingComfy,
  type RoutingModel,
  type RoutingReplica,
  routingTableSchema,
  type RoutingAdapter,
  emptyRoutingTable,
} from "./routing-table.js";
export { seriesReportSchema, type SeriesStepReport } from "./series-feed.js";
export type { RolloutView, HistoryView, OriginView, UpdateCheckView } from "./version-views.js";
export type {
  SourceCheckedView,
  FailureStatus,
  ModelState,
  ModelView,
  PlacementStatus,
  ProfileView,
  ReplicaCounts,
  NodeState,
  NodeView,
  ReplicaView,
  ReplicaMemberView,
  AddedModelView,
  EventView,
  PresetProfileView,
  PresetView,
  AuditEventView,
  CreatedTokenView,
  TokenView,
  ReplicaViewState,
  NodeLlamaCppView,
  PresetCpuView,
} from "./views.js";
export * from "./light.js";
