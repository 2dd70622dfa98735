import { describe, expect, it } from "vitest";
import type { RoutingReplica } from "../../protocol/routing-table.js";
import { chooseReplica } from "./choose-replica.js";
import { hashText } from "./hash-text.js";
import { defaultCacheRoutingWeights, scoreReplicas, type ScoreInput } from "./score-replicas.js";

const replica = (id: string): RoutingReplica => ({ id, node: "n", endpoint: `http://127.0.0.1/${id}`, state: "ready" });
const replicas = ["a", "b", "c"].map(replica);
const base = (over: Partial<ScoreInput>): ScoreInput => ({
  replicas,
  held: new Map(),
  chunks: 10,
  inFlight: new Map(),
  tieBreak: (candidate) => hashText(candidate.id),
  weights: defaultCacheRoutingWeights,
  ...over,
});

describe("scoreReplicas", () => {
  it("sends the prompt to the replica that holds its prefix", () => {
    expect(scoreReplicas(base({ held: new Map([["b", 9]]) }))?.id).toBe("b");
    // The longer prefix wins over a shorter one held elsewhere.
    expect(scoreReplicas(base({ held: new Map([["a", 3], ["c", 9]]) }))?.id).toBe("c");
  });

  it("keeps the prefix holder while it is a little busier than the others", () => {
    const inFlight = new Map([["b", 2]]);
    expect(scoreReplicas(base({ held: new Map([["b", 10]]), inFlight }))?.id).toBe("b");
  });

  it("gives the request elsewhere when the holder's queue is long", () => {
    const inFlight = new Map([["b", 4], ["a", 0], ["c", 1]]);
    expect(scoreReplicas(base({ held: new Map([["b", 10]]), inFlight }))?.id).not.toBe("b");
  });

  it("gives the request elsewhere when the holder's cache is nearly full", () => {
    const cacheUse = (candidate: RoutingReplica) => (candidate.id === "b" ? 0.97 : 0.2);
    expect(scoreReplicas(base({ held: new Map([["b", 10]]), cacheUse }))?.id).not.toBe("b");
    // At half full it still holds the prefix and keeps the request.
    const half = (candidate: RoutingReplica) => (candidate.id === "b" ? 0.5 : 0.2);
    expect(scoreReplicas(base({ held: new Map([["b", 10]]), cacheUse: half }))?.id).toBe("b");
  });

  it("sends a prompt nobody holds to the same replica from every gateway when loads are equal", () => {
    const picks = new Set<string>();
    for (let gateway = 0; gateway < 5; gateway += 1) {
      picks.add(chooseReplica({ candidates: replicas, inFlight: new Map(), prefixHash: 1234, random: Math.random, cache: { held: new Map(), chunks: 4, weights: defaultCacheRoutingWeights } })?.id ?? "");
    }
    expect(picks.size).toBe(1);
    // Different prompts spread over the replicas.
    const spread = new Set<string>();
    for (let prompt = 0; prompt < 60; prompt += 1) {
      spread.add(chooseReplica({ candidates: replicas, inFlight: new Map(), prefixHash: hashText(`p${prompt}`), random: Math.random, cache: { held: new Map(), chunks: 4, weights: defaultCacheRoutingWeights } })?.id ?? "");
    }
    expect(spread.size).toBe(3);
  });

  it("sends a prompt nobody holds to the least busy replica", () => {
    const inFlight = new Map([["a", 2], ["b", 1], ["c", 3]]);
    expect(scoreReplicas(base({ inFlight }))?.id).toBe("b");
  });

  it("never chooses a draining replica, even one holding the prefix", () => {
    const candidates = [{ ...replica("a"), state: "draining" as const }, replica("b")];
    const chosen = chooseReplica({ candidates, inFlight: new Map(), prefixHash: 1, random: Math.random, cache: { held: new Map([["a", 10]]), chunks: 10, weights: defaultCacheRoutingWeights } });
    expect(chosen?.id).toBe("b");
  });
});
