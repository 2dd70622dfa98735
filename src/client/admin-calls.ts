/**
 * The admin API as typed calls, shared by the console and `llmgw ctl`: each
 * builds a request (method, path, body) from a route in admin-routes.ts and
 * carries the type of its answer, from the views in src/protocol. Sending is
 * the caller's (`AdminTransport`): the console sends with the browser's
 * session token, ctl with its identity headers and --dry-run; both over the
 * global fetch. A call is a plain value, so the console can send the same one
 * first as a dry run and then for real.
 *
 * Type imports only: nothing here loads at run time but the route table.
 */
import type {
  AdapterChangeView,
  AdaptersView,
  CanaryView,
  CatalogExport,
  CatalogImportResult,
  CardMemoryAnswer,
  HeadroomView,
  SeriesView,
  SessionView,
  GatewayKeyCreated,
  GatewayKeyView,
  UsageAnswer,
  ModelChangeView,
  PullView,
  HistoryView,
  OriginView,
  RolloutView,
  UpdateCheckView,
  AddedModelView,
  AuditEventView,
  CreatedTokenView,
  EventView,
  ModelView,
  NodeView,
  PresetView,
  ReplicaView,
  TokenView,
} from "../protocol/index.js";
import { adminPath, type AdminMethod, type AdminQuery, type AdminRouteName, adminRoutes } from "./admin-routes.js";

/** One request to the admin API; `Answer` is what a successful answer's JSON body holds. */
export interface AdminCall<Answer> {
  readonly method: AdminMethod;
  readonly path: string;
  readonly body?: unknown;
  /** Never set: it carries the answer's type from the builder to the transport. */
  readonly answer?: Answer;
}

/** What sends a call: the console's and ctl's ways of doing it over fetch. */
export interface AdminTransport {
  send<Answer>(call: AdminCall<Answer>): Promise<Answer>;
}

/** A body the server validates with its own schema (documented in the OpenAPI document), sent as given. */
export type AdminBody = Readonly<Record<string, unknown>>;

/** The answer to restarting a model's replicas. */
export interface RestartView {
  readonly model: string;
  readonly restart_before: string;
  readonly in_place: boolean;
  readonly replicas: number;
}

type Params = Readonly<Record<string, string>>;

function call<Answer>(name: AdminRouteName, params: Params, options: { query?: AdminQuery; body?: unknown } = {}): AdminCall<Answer> {
  // adminPath's parameter type follows the route; here the builders below name them, so the record is passed through.
  const path = adminPath(name, params as never, options.query);
  return { method: adminRoutes[name].method, path, ...(options.body !== undefined ? { body: options.body } : {}) };
}

/** The query every list takes: a page of `limit` rows after `cursor`, rows matching `q`. */
export type ListQuery = AdminQuery & { readonly limit?: number; readonly cursor?: string; readonly q?: string };

export const admin = {
  session: () => call<SessionView>("session", {}),

  models: (query?: ListQuery) => call<{ models: ModelView[]; next_cursor?: string | null }>("models", {}, { query }),
  /** `source_check: false` stores it without reading its sources; `keep_unplaceable: true` stores one no node could hold. */
  addModel: (entry: unknown, query?: { source_check?: false; keep_unplaceable?: true; dry_run?: true }) => call<AddedModelView>("addModel", {}, { query, body: entry }),
  model: (name: string) => call<ModelView>("model", { name }),
  removeModel: (name: string) => call<{ removed: string }>("removeModel", { name }),
  scale: (name: string, body: AdminBody) => call<ModelView>("scale", { name }, { body }),
  resources: (name: string, body: AdminBody) => call<ModelView>("resources", { name }, { body }),
  modelClass: (name: string, modelClass: string) => call<ModelView>("modelClass", { name }, { body: { class: modelClass } }),
  owner: (name: string, owner: string) => call<ModelView>("owner", { name }, { body: { owner } }),
  target: (name: string, inFlight: number | null) => call<ModelView>("target", { name }, { body: { in_flight: inFlight } }),
  fallbacks: (name: string, fallbacks: readonly string[]) => call<ModelView>("fallbacks", { name }, { body: { fallbacks } }),
  context: (name: string, body: AdminBody) => call<ModelChangeView>("context", { name }, { body }),
  gpus: (name: string, body: AdminBody) => call<ModelChangeView>("gpus", { name }, { body }),
  restart: (name: string, body: { in_place?: boolean }) => call<RestartView>("restart", { name }, { body }),
  update: (name: string, body: { to?: string; in_place?: boolean }) => call<RolloutView>("update", { name }, { body }),
  rollback: (name: string, body: { in_place?: boolean }) => call<RolloutView>("rollback", { name }, { body }),
  origin: (name: string) => call<OriginView>("origin", { name }),
  setOrigin: (name: string, origin: string) => call<OriginView>("setOrigin", { name }, { body: { origin } }),
  history: (name: string) => call<HistoryView>("history", { name }),
  pullStatus: (name: string, node?: string) => call<PullView>("pullStatus", { name }, { query: { node } }),
  pull: (name: string, node?: string) => call<PullView>("pull", { name }, { body: node !== undefined ? { node } : {} }),
  adapters: (name: string) => call<AdaptersView>("adapters", { name }),
  addAdapter: (name: string, body: { name: string; source: string; scale?: number; in_place?: boolean }) => call<AdapterChangeView>("addAdapter", { name }, { body }),
  removeAdapter: (name: string, adapter: string, inPlace = false) => call<AdapterChangeView>("removeAdapter", { name, adapter }, { query: { in_place: inPlace ? 1 : undefined } }),
  modelSeries: (name: string) => call<SeriesView>("modelSeries", { name }),
  headroom: (name: string) => call<HeadroomView>("headroom", { name }),
  startCanary: (name: string, body: AdminBody) => call<CanaryView>("startCanary", { name }, { body }),
  canaryGate: (name: string, body: AdminBody) => call<CanaryView>("canaryGate", { name }, { body }),
  promoteCanary: (name: string) => call<CanaryView>("promoteCanary", { name }, { body: {} }),
  abortCanary: (name: string) => call<CanaryView>("abortCanary", { name }, { body: {} }),
  canaries: () => call<{ canaries: CanaryView[] }>("canaries", {}),

  nodes: (query?: ListQuery) => call<{ nodes: NodeView[]; next_cursor?: string | null }>("nodes", {}, { query }),
  cordon: (name: string) => call<NodeView>("cordon", { name }, { body: {} }),
  uncordon: (name: string) => call<NodeView>("uncordon", { name }, { body: {} }),
  drain: (name: string) => call<NodeView>("drain", { name }, { body: {} }),
  nodeToken: () => call<{ token: string; created_at: string }>("nodeToken", {}, { body: {} }),

  replicas: (query?: ListQuery & { model?: string; state?: string; node?: string }) => call<{ replicas: ReplicaView[]; next_cursor?: string | null }>("replicas", {}, { query }),
  startReplica: (body: AdminBody) => call<ReplicaView>("startReplica", {}, { body }),
  /** `drain`: the replica takes no new requests and stops once those in flight end. */
  stopReplica: (id: string, drain: boolean) => call<ReplicaView>("stopReplica", { id }, { query: { drain: drain ? 1 : undefined } }),
  /** A text body read as it arrives: open it with the transport's stream, not send. */
  replicaLogs: (id: string, query: AdminQuery) => call<string>("replicaLogs", { id }, { query }),

  events: (query?: AdminQuery) => call<{ events: EventView[] }>("events", {}, { query }),
  audit: (query?: AdminQuery) => call<{ events: AuditEventView[] }>("audit", {}, { query }),
  series: () => call<SeriesView>("series", {}),
  cardMemory: () => call<CardMemoryAnswer>("cardMemory", {}),
  /** The plan's shape is the planner's own (src/plan), which this contracts-only module may not import: the caller names it. */
  plan: <Plan>(query: AdminQuery) => call<Plan>("plan", {}, { query }),
  presets: () => call<{ presets: PresetView[] }>("presets", {}),
  addPreset: (preset: string, body: { name?: string }, query?: { source_check?: false; keep_unplaceable?: true }) => call<AddedModelView>("addPreset", { name: preset }, { query, body }),
  updates: () => call<{ models: UpdateCheckView[] }>("updates", {}),

  tokens: () => call<{ tokens: TokenView[] }>("tokens", {}),
  createToken: (body: { name: string; role: string }) => call<CreatedTokenView>("createToken", {}, { body }),
  revokeToken: (name: string) => call<{ revoked: string }>("revokeToken", { name }),
  keys: (query?: ListQuery) => call<{ keys: GatewayKeyView[]; next_cursor?: string | null }>("keys", {}, { query }),
  createKey: (body: AdminBody) => call<GatewayKeyCreated>("createKey", {}, { body }),
  revokeKey: (name: string) => call<GatewayKeyView>("revokeKey", { name }),
  usage: (query?: AdminQuery) => call<UsageAnswer & { next_cursor?: string | null }>("usage", {}, { query }),

  exportCatalog: () => call<CatalogExport>("exportCatalog", {}),
  importCatalog: (document: unknown) => call<CatalogImportResult>("importCatalog", {}, { body: document }),
  /** A file as it arrives: open it with the transport's stream, not send. */
  backup: () => call<string>("backup", {}),
  /** The server's live changes as server-sent events: opened, not sent. */
  stream: () => call<string>("stream", {}),
};


/**
 * A list in full: while an answer carries a `next_cursor` (a paged list),
 * the next page is read after it and its items added. The lists answer
 * whole when no `limit` is given, so this is one request today; it keeps a
 * client showing everything should a server page by default.
 */
export async function readAll<T extends { next_cursor?: string | null }, F extends keyof T & string>(
  transport: AdminTransport,
  first: AdminCall<T>,
  field: F,
): Promise<Omit<T, "next_cursor">> {
  const answer = await transport.send(first);
  const items = [...(answer[field] as unknown[])];
  let cursor = answer.next_cursor ?? null;
  for (const seen = new Set<string>(); cursor !== null && !seen.has(cursor); ) {
    // A server repeating a cursor would page forever; the set ends that.
    seen.add(cursor);
    const url = new URL(first.path, "http://list");
    url.searchParams.set("cursor", cursor);
    const page = await transport.send<T>({ method: first.method, path: `${url.pathname}${url.search}` });
    items.push(...(page[field] as unknown[]));
    cursor = page.next_cursor ?? null;
  }
  const { next_cursor: _cursor, ...rest } = answer;
  return { ...rest, [field]: items } as Omit<T, "next_cursor">;
}
