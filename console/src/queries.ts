/**
 * Every read the console makes, with its cache key, in one place: two pages
 * showing the same thing share one key (and one request), and the stream's
 * invalidation (stream.ts) finds each by the key's first word, the resource's
 * name. Components call these hooks; none builds a query of its own.
 */
import { useQuery, type QueryClient } from "@tanstack/react-query";
import { admin, ApiError, send } from "./api.ts";
import type { CardMemory, DryRunView, Plan } from "./types.ts";

export const queryKeys = {
  session: (token: string | null) => ["session", token] as const,
  nodes: ["nodes"] as const,
  models: ["models"] as const,
  model: (name: string) => ["model", name] as const,
  modelOrigin: (name: string) => ["model", name, "origin"] as const,
  modelHistory: (name: string) => ["model", name, "history"] as const,
  replicas: (model?: string) => ["replicas", model ?? "all"] as const,
  events: (query: { model?: string; limit?: number }) => ["events", query] as const,
  audit: (model?: string, limit?: number) => ["audit", model ?? "all", limit ?? "default"] as const,
  series: (model?: string) => ["series", model ?? "all"] as const,
  cardMemory: ["card-memory"] as const,
  headroom: (model: string | null) => ["headroom", model] as const,
  canaries: ["canaries"] as const,
  canary: (model: string) => ["canaries", model] as const,
  presets: ["presets"] as const,
  plan: (asked: PlanAsked | null) => ["plan", asked] as const,
  updates: ["updates"] as const,
  tokens: ["tokens"] as const,
  keys: ["keys"] as const,
  usage: (since: string) => ["usage", since] as const,
  validate: (text: string) => ["validate", text] as const,
};

export const useSessionCheck = (token: string | null) =>
  useQuery({ queryKey: queryKeys.session(token), queryFn: () => send(admin.session()), enabled: token !== null, retry: false, staleTime: Infinity });

/** The lists most pages read; the stream marks them stale when they change. */
export const useNodes = () => useQuery({ queryKey: queryKeys.nodes, queryFn: () => send(admin.nodes()).then((answer) => answer.nodes) });
const modelsQuery = { queryKey: queryKeys.models, queryFn: () => send(admin.models()).then((answer) => answer.models) };
export const useModels = () => useQuery(modelsQuery);
/** One model, for its page and for a change being followed (every second): one cache entry for both. */
export const useModel = (name: string, refetchInterval?: number) =>
  useQuery({ queryKey: queryKeys.model(name), queryFn: () => send(admin.model(name)), ...(refetchInterval !== undefined ? { refetchInterval } : {}) });
export const useModelOrigin = (name: string) => useQuery({ queryKey: queryKeys.modelOrigin(name), queryFn: () => send(admin.origin(name)) });
export const useModelHistory = (name: string) => useQuery({ queryKey: queryKeys.modelHistory(name), queryFn: () => send(admin.history(name)), retry: false });
/** One cache entry per model for every reader (the model page and a change being followed share it), so its shape is the same for all. */
const replicasQuery = (model?: string) => ({
  queryKey: queryKeys.replicas(model),
  queryFn: () => send(admin.replicas({ model })).then((answer) => answer.replicas),
});
export const useReplicas = (model?: string, refetchInterval?: number) => useQuery({ ...replicasQuery(model), ...(refetchInterval !== undefined ? { refetchInterval } : {}) });

/**
 * The models page's lists, asked for as the navigation starts: otherwise they
 * were asked for only once the session check and the page's code had
 * loaded, one after the other (about 400 ms of the page's 1.3 s with 2,000
 * models here).
 */
export function prefetchModelsPage(client: QueryClient): void {
  void client.prefetchQuery(modelsQuery);
  void client.prefetchQuery(replicasQuery());
}
export const useEvents = (query: { model?: string; limit?: number } = {}) =>
  useQuery({ queryKey: queryKeys.events(query), queryFn: () => send(admin.events({ limit: query.limit ?? 200, model: query.model })).then((answer) => answer.events) });
export const useAudit = (model?: string, limit?: number) =>
  useQuery({ queryKey: queryKeys.audit(model, limit), queryFn: () => send(admin.audit({ model, limit })).then((answer) => answer.events) });
export const useSeries = (model?: string) =>
  useQuery({
    queryKey: queryKeys.series(model),
    queryFn: () => send(model ? admin.modelSeries(model) : admin.series()),
    refetchInterval: 10_000,
  });

/** Each card's memory by node and index ("node\u0000index"): the planner's shares beside what the card reports. */
export const useCardMemory = () =>
  useQuery({
    queryKey: queryKeys.cardMemory,
    queryFn: () =>
      send(admin.cardMemory()).then((answer) => {
        const byCard = new Map<string, CardMemory>();
        for (const node of answer.nodes) for (const card of node.cards) byCard.set(`${node.node}\u0000${card.index}`, card);
        return byCard;
      }),
  });

export const useHeadroom = (model: string | null) =>
  useQuery({ queryKey: queryKeys.headroom(model), queryFn: () => send(admin.headroom(model ?? "")), enabled: model !== null });

export const useCanaries = () => useQuery({ queryKey: queryKeys.canaries, queryFn: () => send(admin.canaries()).then((answer) => answer.canaries) });
/** Read from the list (a model has at most one canary row): asking for a model that never had one answers 404, which the browser logs as an error. */
export const useModelCanary = (model: string) =>
  useQuery({ queryKey: queryKeys.canary(model), queryFn: async () => (await send(admin.canaries())).canaries.find((each) => each.model === model) ?? null });

export const usePresets = () => useQuery({ queryKey: queryKeys.presets, queryFn: () => send(admin.presets()).then((answer) => answer.presets) });
export interface PlanAsked {
  readonly source: string;
  readonly gpus?: string;
  readonly context?: string;
}
export const usePlan = (asked: PlanAsked | null) =>
  useQuery({
    queryKey: queryKeys.plan(asked),
    enabled: asked !== null,
    retry: false,
    queryFn: () => send(admin.plan<Plan>({ source: asked?.source, gpus: asked?.gpus, context: asked?.context })),
  });
export const useUpdates = () => useQuery({ queryKey: queryKeys.updates, queryFn: () => send(admin.updates()).then((answer) => answer.models) });

export const useTokens = (enabled = true) => useQuery({ queryKey: queryKeys.tokens, queryFn: () => send(admin.tokens()).then((answer) => answer.tokens), enabled });
export const useKeys = (enabled = true) => useQuery({ queryKey: queryKeys.keys, queryFn: () => send(admin.keys()).then((answer) => answer.keys), enabled });
export const useUsage = (since: string) => useQuery({ queryKey: queryKeys.usage(since), queryFn: () => send(admin.usage({ since })), refetchInterval: 15_000 });

/** A model file checked by the server's dry run as it is typed: its answer, or its refusal with the details placed on lines. */
export type ModelCheck<Placed> = { ok: true; answer: DryRunView } | { ok: false; error: ApiError; placed: Placed[] };
export const useModelCheck = <Placed>(text: string, entry: unknown, place: (detail: ApiError["details"][number]) => Placed, enabled: boolean) =>
  useQuery({
    queryKey: queryKeys.validate(text),
    enabled,
    retry: false,
    staleTime: Infinity,
    queryFn: async (): Promise<ModelCheck<Placed>> => {
      try {
        const answer = await send(admin.addModel(entry), { dryRun: true });
        return { ok: true, answer: answer as unknown as DryRunView };
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        return { ok: false, error, placed: error.details.map(place) };
      }
    },
  });
