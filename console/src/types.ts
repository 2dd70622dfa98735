/**
 * The shapes the console reads: the admin API's own views from src/protocol
 * (one definition for the API, the CLI and the console), and the few the
 * console alone reads, as the server documents them.
 */
export type {
  AuditEventView,
  EventView,
  ModelView,
  NodeCardView,
  NodeView,
  PresetView,
  ReplicaView,
  AddedModelView,
  TokenView,
  CreatedTokenView,
} from "../../src/protocol/views.ts";
export type { CanaryView, ArmView } from "../../src/protocol/canary-views.ts";
export type { GatewayKeyView, GatewayKeyCreated, UsageAnswer, UsageView } from "../../src/protocol/gateway-views.ts";
export type { HistoryView, OriginView, UpdateCheckView } from "../../src/protocol/version-views.ts";
export type { CatalogExport, CatalogImportResult } from "../../src/protocol/catalog-export.ts";
export type { Plan, PlanCandidate } from "../../src/plan/candidates.ts";

export type { SessionView, SeriesPoint, SeriesView, HeadroomView, CardMemoryAnswer, CardMemoryUseView as CardMemory, PlannedMemoryView as PlannedShare } from "../../src/protocol/console.ts";
export type { DryRunAnswer as DryRunView, Change as PlannedChange } from "../../src/protocol/dry-run.ts";
