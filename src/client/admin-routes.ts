/**
 * Every admin-API route a client of this repository calls (the console and
 * `llmgw ctl`), written once: a method and a path in the OpenAPI document's
 * own form (`{name}` for a path parameter). admin-routes.test.ts checks each
 * against the document the server serves, so a route renamed on the server
 * fails there rather than as a 404 in front of a person.
 *
 * No imports: the console's bundle and ctl's start both load it.
 */
export type AdminMethod = "GET" | "POST" | "DELETE";

export interface AdminRoute {
  readonly method: AdminMethod;
  readonly path: `/api/v1/${string}`;
}

const route = <const P extends `/api/v1/${string}`>(method: AdminMethod, path: P) => ({ method, path }) as const;

export const adminRoutes = {
  session: route("GET", "/api/v1/session"),
  stream: route("GET", "/api/v1/stream"),

  models: route("GET", "/api/v1/models"),
  addModel: route("POST", "/api/v1/models"),
  model: route("GET", "/api/v1/models/{name}"),
  removeModel: route("DELETE", "/api/v1/models/{name}"),
  scale: route("POST", "/api/v1/models/{name}/scale"),
  resources: route("POST", "/api/v1/models/{name}/resources"),
  modelClass: route("POST", "/api/v1/models/{name}/class"),
  owner: route("POST", "/api/v1/models/{name}/owner"),
  target: route("POST", "/api/v1/models/{name}/target"),
  fallbacks: route("POST", "/api/v1/models/{name}/fallbacks"),
  context: route("POST", "/api/v1/models/{name}/context"),
  gpus: route("POST", "/api/v1/models/{name}/gpus"),
  restart: route("POST", "/api/v1/models/{name}/restart"),
  update: route("POST", "/api/v1/models/{name}/update"),
  rollback: route("POST", "/api/v1/models/{name}/rollback"),
  origin: route("GET", "/api/v1/models/{name}/origin"),
  setOrigin: route("POST", "/api/v1/models/{name}/origin"),
  history: route("GET", "/api/v1/models/{name}/history"),
  pullStatus: route("GET", "/api/v1/models/{name}/pull"),
  pull: route("POST", "/api/v1/models/{name}/pull"),
  adapters: route("GET", "/api/v1/models/{name}/adapters"),
  addAdapter: route("POST", "/api/v1/models/{name}/adapters"),
  removeAdapter: route("DELETE", "/api/v1/models/{name}/adapters/{adapter}"),
  modelSeries: route("GET", "/api/v1/models/{name}/series"),
  headroom: route("GET", "/api/v1/models/{name}/headroom"),
  startCanary: route("POST", "/api/v1/models/{name}/canary"),
  canaryGate: route("POST", "/api/v1/models/{name}/canary/gate"),
  promoteCanary: route("POST", "/api/v1/models/{name}/canary/promote"),
  abortCanary: route("POST", "/api/v1/models/{name}/canary/abort"),
  canaries: route("GET", "/api/v1/canaries"),

  nodes: route("GET", "/api/v1/nodes"),
  cordon: route("POST", "/api/v1/nodes/{name}/cordon"),
  uncordon: route("POST", "/api/v1/nodes/{name}/uncordon"),
  drain: route("POST", "/api/v1/nodes/{name}/drain"),
  nodeToken: route("POST", "/api/v1/node-tokens"),

  replicas: route("GET", "/api/v1/replicas"),
  startReplica: route("POST", "/api/v1/replicas"),
  stopReplica: route("DELETE", "/api/v1/replicas/{id}"),
  replicaLogs: route("GET", "/api/v1/replicas/{id}/logs"),

  events: route("GET", "/api/v1/events"),
  audit: route("GET", "/api/v1/audit"),
  series: route("GET", "/api/v1/series"),
  cardMemory: route("GET", "/api/v1/card-memory"),
  plan: route("GET", "/api/v1/plan"),
  presets: route("GET", "/api/v1/presets"),
  addPreset: route("POST", "/api/v1/presets/{name}"),
  updates: route("GET", "/api/v1/updates"),

  tokens: route("GET", "/api/v1/tokens"),
  createToken: route("POST", "/api/v1/tokens"),
  revokeToken: route("DELETE", "/api/v1/tokens/{name}"),
  keys: route("GET", "/api/v1/keys"),
  createKey: route("POST", "/api/v1/keys"),
  revokeKey: route("DELETE", "/api/v1/keys/{name}"),
  usage: route("GET", "/api/v1/usage"),

  exportCatalog: route("GET", "/api/v1/catalog/export"),
  importCatalog: route("POST", "/api/v1/catalog/import"),
  backup: route("GET", "/api/v1/backup"),
  openapi: route("GET", "/api/v1/openapi.json"),
} as const satisfies Record<string, AdminRoute>;

export type AdminRouteName = keyof typeof adminRoutes;

/** A query's values; undefined, null and "" are left out, as a form's empty field is. */
export type AdminQuery = Readonly<Record<string, string | number | boolean | undefined | null>>;

/** The path parameters a route's template names, e.g. `{ name: string }` for `/api/v1/models/{name}`. */
type ParamsOf<P extends string> = P extends `${string}{${infer Name}}${infer Rest}` ? { readonly [K in Name]: string } & ParamsOf<Rest> : unknown;

/** A route's path with its parameters filled in (each encoded: a model name may hold a "/") and its query after. */
export function adminPath<N extends AdminRouteName>(name: N, params: ParamsOf<(typeof adminRoutes)[N]["path"]>, query?: AdminQuery): string {
  const values = params as Readonly<Record<string, string>>;
  const path = adminRoutes[name].path.replace(/\{([A-Za-z0-9_]+)\}/g, (_whole, key: string) => encodeURIComponent(values[key] as string));
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(query ?? {})) if (value !== undefined && value !== null && value !== "") search.set(key, String(value));
  const text = search.toString();
  return text ? `${path}?${text}` : path;
}
