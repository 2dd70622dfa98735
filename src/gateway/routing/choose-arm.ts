import type { RoutingReplica } from "../../protocol/index.js";
import { hashText } from "./hash-text.js";

export type Arm = "stable" | "canary";

/** Hash buckets a sticky key falls in: 10,000 give a weight to a hundredth of a percent. */
const buckets = 10_000;

/**
 * Which arm of a model with a canary answers this request, pure. With a
 * sticky key (the request's `user`, else its `x-session-id`), the key's hash
 * decides, so one user stays on one arm across requests and across gateway
 * processes (FNV-1a is the same everywhere, where a per-process random draw
 * would split a conversation between two revisions). Without one, a random
 * draw by weight.
 */
export function chooseArm(weightPercent: number, stickyKey: string | undefined, random: () => number): Arm {
  if (weightPercent <= 0) return "stable";
  if (weightPercent >= 100) return "canary";
  const point = stickyKey === undefined ? random() * buckets : hashText(stickyKey) % buckets;
  return point < weightPercent * (buckets / 100) ? "canary" : "stable";
}

/** The arm a replica serves. */
export function armOf(replica: RoutingReplica): Arm {
  return replica.arm === "canary" ? "canary" : "stable";
}

/** The request's sticky key: its `user` field, else its `x-session-id` header; undefined when neither is a non-empty string. */
export function stickyKeyOf(user: unknown, sessionHeader: string | string[] | undefined): string | undefined {
  if (typeof user === "string" && user !== "") return `user:${user}`;
  const session = Array.isArray(sessionHeader) ? sessionHeader[0] : sessionHeader;
  return session !== undefined && session !== "" ? `session:${session}` : undefined;
}

/** The chosen arm's replicas; the other arm's when it has none left (a canary still starting, or all tried), so an arm never fails a request another could answer. */
export function sameArmFirst(replicas: readonly RoutingReplica[], arm: Arm): readonly RoutingReplica[] {
  const same = replicas.filter((replica) => armOf(replica) === arm);
  return same.length > 0 ? same : replicas;
}
