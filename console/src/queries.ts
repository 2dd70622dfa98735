import { useQuery, type QueryClient } from "@tanstack/react-query";
import { api } from "./api.ts";
import type { CardMemory, CardMemoryAnswer, EventView, ModelView, NodeView, ReplicaView, SeriesView } from "./types.ts";

/** The lists most pages read; the stream marks them stale when they change. */
export const useNodes = () => useQuery({ queryKey: ["nodes"], queryFn: () => api<{ nodes: NodeView[] }>("/api/v1/nodes").then((answer) => answer.nodes) });
const modelsQuery = { queryKey: ["models"], queryFn: () => api<{ models: ModelView[] }>("/api/v1/models").then((answer) => answer.models) };
export const useModels = () => useQuery(modelsQuery);
/** One cache entry per model for every reader (the model page and a change being followed share it), so its shape is the same for all. */
const replicasQuery = (model?: string) => ({
  queryKey: ["replicas", model ?? "all"],
  queryFn: () => api<{ replicas: ReplicaView[] }>("/api/v1/replicas", { query: { model } }).then((answer) => answer.replicas),
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
  useQuery({ queryKey: ["events", query], queryFn: () => api<{ events: EventView[] }>("/api/v1/events", { query: { limit: query.limit ?? 200, model: query.model } }).then((answer) => answer.events) });
export const useSeries = (model?: string) =>
  useQuery({
    queryKey: ["series", model ?? "all"],
    queryFn: () => api<SeriesView>(model ? `/api/v1/models/${encodeURIComponent(model)}/series` : "/api/v1/series"),
    refetchInterval: 10_000,
  });

/** Each card's memory by node and index ("node\u0000index"): the planner's shares beside what the card reports. */
export const useCardMemory = () =>
  useQuery({
    queryKey: ["card-memory"],
    queryFn: () =>
      api<CardMemoryAnswer>("/api/v1/card-memory").then((answer) => {
        const byCard = new Map<string, CardMemory>();
        for (const node of answer.nodes) for (const card of node.cards) byCard.set(`${node.node}\u0000${card.index}`, card);
        return byCard;
      }),
  });
