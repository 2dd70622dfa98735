import { describe, expect, it } from "vitest";
import type { RoutingReplica } from "../../protocol/routing-table.js";
import { chooseReplica, prefixOverloadMargin } from "./choose-replica.js";
import { hashText } from "./hash-text.js";

const replica = (id: string, state: "ready" | "draining" = "ready"): RoutingReplica => ({ id, node: "n", endpoint: `http://127.0.0.1/${id}`, state });

/** A deterministic random source cycling through the given values. */
const sequence = (...values: number[]) => {
  let index = 0;
  return () => values[index++ % values.length] as number;
};

describe("chooseReplica", () => {
  it("takes the less busy of two random candidates", () => {
    const candidates = [replica("a"), replica("b"), replica("c")];
    const inFlight = new Map([["a", 5], ["b", 1], ["c", 9]]);
    // Draws a, then b (the second draw skips the first): b has fewer in flight.
    expect(chooseReplica({ candidates, inFlight, prefixHash: undefined, random: sequence(0, 0) })?.id).toBe("b");
    // Draws c then a: a has fewer in flight.
    expect(chooseReplica({ candidates, inFlight, prefixHash: undefined, random: sequence(0.9, 0) })?.id).toBe("a");
  });

  it("never gives a new request to a draining replica", () => {
    const candidates = [replica("a", "draining"), replica("b")];
    for (const draw of [0, 0.3, 0.6, 0.99]) {
      expect(chooseReplica({ candidates, inFlight: new Map(), prefixHash: undefined, random: () => draw })?.id).toBe("b");
    }
    expect(chooseReplica({ candidates: [replica("a", "draining")], inFlight: new Map(), prefixHash: undefined, random: Math.random })).toBeUndefined();
  });

  it("spreads load evenly over many requests", () => {
    const candidates = ["a", "b", "c", "d"].map((id) => replica(id));
    const inFlight = new Map<string, number>();
    for (let request = 0; request < 400; request += 1) {
      const chosen = chooseReplica({ candidates, inFlight, prefixHash: undefined, random: Math.random }) as RoutingReplica;
      inFlight.set(chosen.id, (inFlight.get(chosen.id) ?? 0) + 1);
    }
    const loads = [...inFlight.values()];
    // Random choice alone would leave a gap of about 20 here; two choices keep it to a few.
    expect(Math.max(...loads) - Math.min(...loads)).toBeLessThanOrEqual(5);
  });

  it("sends one prompt prefix to one replica, and others elsewhere", () => {
    const candidates = ["a", "b", "c", "d"].map((id) => replica(id));
    const owners = new Set<string>();
    for (let attempt = 0; attempt < 10; attempt += 1) {
      owners.add(chooseReplica({ candidates, inFlight: new Map(), prefixHash: hashText("system: you are a lawyer"), random: Math.random })?.id as string);
    }
    expect(owners.size).toBe(1);
    const spread = new Set(
      Array.from({ length: 40 }, (_, index) => chooseReplica({ candidates, inFlight: new Map(), prefixHash: hashText(`system prompt ${index}`), random: Math.random })?.id),
    );
    expect(spread.size).toBeGreaterThan(1);
  });

  it("moves a prefix off its replica while that one is overloaded", () => {
    const candidates = ["a", "b"].map((id) => replica(id));
    const prefixHash = hashText("a popular system prompt");
    const owner = chooseReplica({ candidates, inFlight: new Map(), prefixHash, random: Math.random })?.id as string;
    const other = owner === "a" ? "b" : "a";
    const busy = new Map([[owner, prefixOverloadMargin + 1], [other, 0]]);
    expect(chooseReplica({ candidates, inFlight: busy, prefixHash, random: Math.random })?.id).toBe(other);
    const justBusy = new Map([[owner, prefixOverloadMargin], [other, 0]]);
    expect(chooseReplica({ candidates, inFlight: justBusy, prefixHash, random: Math.random })?.id).toBe(owner);
  });
});
