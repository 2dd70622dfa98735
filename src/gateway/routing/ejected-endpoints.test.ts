import { describe, expect, it } from "vitest";
import type { RoutingReplica } from "../../protocol/routing-table.js";
import { UpstreamError } from "../wire/upstream-error.js";
import { chooseReplica } from "./choose-replica.js";
import { EjectedEndpoints, ejectForMs } from "./ejected-endpoints.js";

const replica = (id: string, extra: Partial<RoutingReplica> = {}): RoutingReplica => ({ id, node: "n", endpoint: `http://${id}.replica.test:8000`, state: "ready", ...extra });

/** A clock the test moves by hand. */
function testClock(): { now: () => number; advance: (ms: number) => void } {
  let at = 1_000;
  return { now: () => at, advance: (ms) => (at += ms) };
}

// As ProxiedAnswer builds them: no answer, with the socket's code; or an answer's status.
const refused = (upstream: string) => new UpstreamError(undefined, true, `replica ${upstream}`, "no answer: ECONNREFUSED (connect ECONNREFUSED 127.0.0.1:9001)", "ECONNREFUSED");
const resetUnanswered = (upstream: string) => new UpstreamError(undefined, true, `replica ${upstream}`, "no answer: ECONNRESET (the upstream closed the connection without answering)", "ECONNRESET");
const connectTimeout = (upstream: string) => new UpstreamError(undefined, true, `replica ${upstream}`, "no answer: UPSTREAM_CONNECT_TIMEOUT (could not connect within 5000 ms)", "UPSTREAM_CONNECT_TIMEOUT");

/**
 * With `random` at 0 the choice between two idle replicas always falls on the
 * first listed: whatever else it picks, ejection made it.
 */
function choose(candidates: RoutingReplica[], ejected: EjectedEndpoints, extra: { arm?: "stable" | "canary" } = {}): string | undefined {
  return chooseReplica({ candidates, inFlight: new Map(), prefixHash: undefined, random: () => 0, ejected: ejected.isEjected, ...extra })?.id;
}

describe("ejecting a replica's endpoint that refused a connection", () => {
  it("skips the endpoint after a refused connect, a reset before any answer or a connect timeout, and chooses it again once its time is up", () => {
    for (const failure of [refused, resetUnanswered, connectTimeout]) {
      const clock = testClock();
      const ejected = new EjectedEndpoints({ now: clock.now });
      const dead = replica("dead");
      const live = replica("live");
      expect(choose([dead, live], ejected)).toBe("dead");
      expect(ejected.noteFailure(dead, failure("dead"))).toBe(true);
      for (let request = 0; request < 20; request += 1) expect(choose([dead, live], ejected)).toBe("live");
      clock.advance(ejectForMs - 1);
      expect(choose([dead, live], ejected)).toBe("live");
      clock.advance(1);
      expect(choose([dead, live], ejected)).toBe("dead");
    }
  });

  it("still chooses among the replicas when every one is ejected, so a model never becomes unreachable", () => {
    const ejected = new EjectedEndpoints({ now: testClock().now });
    const a = replica("a");
    const b = replica("b");
    ejected.noteFailure(a, refused("a"));
    ejected.noteFailure(b, refused("b"));
    expect(choose([a, b], ejected)).toBe("a");
    // What is left to try after one attempt: the other, ejected too.
    expect(choose([b], ejected)).toBe("b");
    // A draining replica is still never chosen, ejected or not.
    expect(choose([replica("a", { state: "draining" })], ejected)).toBeUndefined();
  });

  it("does not eject an engine that answered, even with an error, nor for a client that went away", () => {
    const ejected = new EjectedEndpoints({ now: testClock().now });
    const busy = replica("busy");
    const live = replica("live");
    const failures: unknown[] = [
      new UpstreamError(503, true, "replica busy", "answered 503"),
      new UpstreamError(502, true, "replica busy", "answered 502"),
      // Headers came, then the connection broke before the first body byte: the engine was up to answer.
      new UpstreamError(200, true, "replica busy", "the answer was cut before its first byte: ECONNRESET (socket hang up)", "ECONNRESET"),
      // The client closed its connection while the gateway was connecting.
      new UpstreamError(undefined, false, "replica busy", "no answer: the client closed its connection"),
      // An engine's own 500 or 400 is not an UpstreamError at all: it goes to the client as it is.
      new Error("answered 500"),
    ];
    for (const failure of failures) {
      expect(ejected.noteFailure(busy, failure)).toBe(false);
      expect(choose([busy, live], ejected)).toBe("busy");
    }
  });

  it("counts one ejection for an endpoint that fails again while ejected, and keeps it out from the latest failure", () => {
    const clock = testClock();
    const ejected = new EjectedEndpoints({ now: clock.now });
    const dead = replica("dead");
    const live = replica("live");
    expect(ejected.noteFailure(dead, refused("dead"))).toBe(true);
    clock.advance(ejectForMs - 1_000);
    // Another request that was already connecting when the engine died.
    expect(ejected.noteFailure(dead, resetUnanswered("dead"))).toBe(false);
    clock.advance(2_000);
    expect(choose([dead, live], ejected)).toBe("live");
    clock.advance(ejectForMs);
    expect(choose([dead, live], ejected)).toBe("dead");
    expect(ejected.noteFailure(dead, refused("dead"))).toBe(true);
  });

  it("chooses a replica again at once when the routing table gives it a new endpoint", () => {
    const ejected = new EjectedEndpoints({ now: testClock().now });
    const dead = replica("r1", { endpoint: "http://127.0.0.1:9001" });
    ejected.noteFailure(dead, refused("r1"));
    expect(choose([dead, replica("live")], ejected)).toBe("live");
    expect(choose([replica("r1", { endpoint: "http://127.0.0.1:9002" }), replica("live")], ejected)).toBe("r1");
  });

  it("sends a canary's share to the stable arm while the canary's only replica is ejected", () => {
    const ejected = new EjectedEndpoints({ now: testClock().now });
    const canary = replica("canary", { arm: "canary" });
    const stable = replica("stable");
    expect(choose([stable, canary], ejected, { arm: "canary" })).toBe("canary");
    ejected.noteFailure(canary, refused("canary"));
    expect(choose([stable, canary], ejected, { arm: "canary" })).toBe("stable");
  });
});
