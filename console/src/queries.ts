import { useQuery } from "@tanstack/react-query";
import { api } from "./api.ts";
import type { CardMemory, CardMemoryAnswer, EventView, ModelView, NodeView, ReplicaView, SeriesView } from "./types.ts";

/** The lists most pages read; the stream marks them stale when they change. */
export const useNodes = () => useQuery({ queryKey: ["nodes"], queryFn: () => api<{ nodes: NodeView[] }>("/api/v1/nodes").then((answer) => answer.nodes) });
export const useModels = () => useQuery({ queryKey: ["models"], queryFn: () => api<{ models: ModelView[] }>("/api/v1/models").then((answer) => answer.models) });
/** One cache entry per model for every reader (the model page and a change being followed share it), so its shape is the same for all. */
export const useReplicas = (model?: string, refetchInterval?: number) =>
  useQuery({
    queryKey: ["replicas", model ?? "all"],
    queryFn: () => api<{ replicas: ReplicaView[] }>("/api/v1/replicas", { query: { model } }).then((answer) => answer.replicas),
    ...(refetchInterval !== undefined ? { refetchInterval } : {}),
  });
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
