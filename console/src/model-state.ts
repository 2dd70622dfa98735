import type { ModelView, ReplicaView } from "./types.ts";

/** The filter groups of the models table: one word per state a person scans for. */
export type StateGroup = "serving" | "starting" | "on-demand" | "not-placed" | "failed" | "stopped" | "external";

export interface StateText {
  readonly group: StateGroup;
  readonly text: string;
}

function secondsUntil(iso: string, now: number): number {
  return Math.max(0, Math.round((Date.parse(iso) - now) / 1000));
}

/**
 * Everything a model's state row must say in one line: how many replicas
 * serve of how many wanted, what a starting one is doing (fetching how far,
 * loading), why nothing is placed, and a failure with its backoff.
 */
/**
 * Replicas by model, grouped once: a page of 2,000 models that handed every
 * model the whole replica list scanned it once per model.
 */
export function replicasByModel(replicas: readonly ReplicaView[]): ReadonlyMap<string, readonly ReplicaView[]> {
  const byModel = new Map<string, ReplicaView[]>();
  for (const replica of replicas) {
    const list = byModel.get(replica.model);
    if (list) list.push(replica);
    else byModel.set(replica.model, [replica]);
  }
  return byModel;
}

export function modelStateText(model: ModelView, replicas: readonly ReplicaView[], now = Date.now()): StateText {
  const { ready, desired } = model.replicas;
  if (model.state === "external") return { group: "external", text: `external: served by ${model.external?.base_url ?? "its provider"}` };
  const failure = model.last_failure;
  if (failure && failure.retry_at !== null && ready < desired) {
    return { group: "failed", text: `failed: ${failure.reason}; ${failure.failures} in a row, next try in ${secondsUntil(failure.retry_at, now)} s` };
  }
  if (model.placement?.state === "unplaceable" && ready < Math.max(desired, 1)) {
    // Some serve, the rest of the count asked for has no room: both said, 2/3 and why.
    const serving = ready > 0 ? `serving ${ready}/${desired}, the rest ` : "";
    return { group: "not-placed", text: `${serving}not placed: ${model.placement.reason ?? "no node has room"}` };
  }
  const starting = replicas.filter((replica) => replica.model === model.name && (replica.state === "fetching" || replica.state === "starting" || replica.state === "pending"));
  if (starting.length > 0 && ready < Math.max(desired, 1)) {
    const steps = starting.map((replica) =>
      replica.state === "fetching" ? `fetching ${Math.round((replica.progress?.fraction ?? 0) * 100)} %` : replica.state === "pending" ? "placed" : "loading",
    );
    return { group: "starting", text: `starting (${[...new Set(steps)].join(", ")}), ${ready}/${desired} serving` };
  }
  if (model.state === "on-demand" || (model.scaling.min === 0 && ready === 0)) {
    return { group: "on-demand", text: ready > 0 ? `on demand, serving ${ready}` : "on demand, idle (starts at the first request)" };
  }
  if (desired === 0) return { group: "stopped", text: "stopped (scaled to 0)" };
  if (model.placement?.state === "waiting") return { group: "starting", text: `waiting: ${model.placement.reason ?? "for room"}, ${ready}/${desired} serving` };
  if (ready < desired) return { group: ready > 0 ? "serving" : "starting", text: `serving ${ready}/${desired}` };
  return { group: "serving", text: `serving ${ready}/${desired}` };
}
