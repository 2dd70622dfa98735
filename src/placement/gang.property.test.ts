import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { modelClasses } from "../catalog/schema.js";
import { choosePreemptions } from "./choose-preemptions.js";
import { placeReplicas } from "./place-replicas.js";
import { GiB } from "./testing/fleet-builder.js";
import type { DemandProfile, HeldReplica, ReplicaDemand, Snapshot, SnapshotNode } from "./types.js";

/** Up to 8 nodes of one card group each, on three fabrics, some cards held by one-node replicas. */
const fleetArbitrary: fc.Arbitrary<Snapshot> = fc
  .record({
    nodes: fc.array(
      fc.record({ cards: fc.integer({ min: 1, max: 8 }), cardClass: fc.constantFrom("h100", "a100"), fabric: fc.constantFrom("f0", "f1", "f2"), memoryGiB: fc.integer({ min: 0, max: 256 }) }),
      { minLength: 0, maxLength: 8 },
    ),
    holdings: fc.array(fc.nat(), { maxLength: 30 }),
  })
  .map(({ nodes, holdings }) => {
    const snapshotNodes: SnapshotNode[] = nodes.map((shape, position) => ({
      name: `node-${position}`,
      schedulable: true,
      engines: ["vllm", "sglang"],
      cards: Array.from({ length: shape.cards }, (_unused, index) => ({ index, cardClass: shape.cardClass, memoryBytes: 80 * GiB, fabric: shape.fabric })),
      memoryBytes: shape.memoryGiB * GiB,
      cpuCores: 64,
    }));
    const replicas: HeldReplica[] = [];
    const taken = new Map<string, Set<number>>();
    holdings.forEach((value, position) => {
      const holder = snapshotNodes[value % Math.max(1, snapshotNodes.length)];
      if (!holder) return;
      const used = taken.get(holder.name) ?? new Set<number>();
      taken.set(holder.name, used);
      const card = holder.cards.find((candidate) => !used.has(candidate.index));
      if (!card) return;
      used.add(card.index);
      replicas.push({ id: `r-${position}`, model: `held-${value % 4}`, profile: "p", node: holder.name, cards: [card.index], memoryBytes: 0, cpuCores: 0, modelClass: modelClasses[value % 3] ?? "standard" });
    });
    return { nodes: snapshotNodes, replicas };
  });

const profileArbitrary: fc.Arbitrary<DemandProfile> = fc.record({
  name: fc.constant("p"),
  engine: fc.constant("vllm" as const),
  cardClass: fc.constantFrom("h100", "a100", undefined),
  gpus: fc.integer({ min: 1, max: 8 }),
  nodes: fc.integer({ min: 1, max: 3 }),
  memoryBytes: fc.integer({ min: 0, max: 128 }).map((gib) => gib * GiB),
  cpuCores: fc.constant(0),
  bytesPerCard: fc.constant(undefined),
});

const demandsArbitrary: fc.Arbitrary<ReplicaDemand[]> = fc
  .array(fc.record({ modelClass: fc.constantFrom(...modelClasses), count: fc.integer({ min: 1, max: 3 }), profiles: fc.array(profileArbitrary, { minLength: 1, maxLength: 2 }) }), { maxLength: 6 })
  .map((demands) => demands.map((demand, position) => ({ ...demand, model: `model-${position}`, profiles: demand.profiles.map((profile, index) => ({ ...profile, name: `profile-${index}` })) })));

const fabricOf = (snapshot: Snapshot, nodeName: string, card: number) => snapshot.nodes.find((each) => each.name === nodeName)?.cards.find((each) => each.index === card)?.fabric;

describe("gang placement properties", () => {
  it("a gang never spans fabrics, has every member it asks for on distinct nodes, each with its cards", () => {
    fc.assert(
      fc.property(fleetArbitrary, demandsArbitrary, (snapshot, demands) => {
        for (const placement of placeReplicas(snapshot, demands).placements) {
          const profile = demands.find((each) => each.model === placement.model)?.profiles.find((each) => each.name === placement.profile);
          const nodes = profile?.nodes ?? 1;
          if (nodes <= 1) {
            expect(placement.members).toBeUndefined();
            continue;
          }
          const members = placement.members ?? [];
          expect(members).toHaveLength(nodes);
          expect(new Set(members.map((member) => member.node)).size).toBe(nodes);
          expect(members.map((member) => member.rank)).toEqual(members.map((_member, index) => index));
          const fabrics = new Set(members.flatMap((member) => member.cards.map((card) => fabricOf(snapshot, member.node, card))));
          expect(fabrics.size).toBe(1);
          for (const member of members) expect(member.cards).toHaveLength(profile?.gpus ?? 0);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("never gives a card twice or takes one that is held: every node's free cards bound what is placed on it", () => {
    fc.assert(
      fc.property(fleetArbitrary, demandsArbitrary, (snapshot, demands) => {
        const used = new Map<string, Set<number>>();
        for (const replica of snapshot.replicas) for (const card of replica.cards) (used.get(replica.node) ?? used.set(replica.node, new Set()).get(replica.node))?.add(card);
        for (const placement of placeReplicas(snapshot, demands).placements) {
          for (const member of placement.members ?? [{ node: placement.node, cards: placement.cards, rank: 0 }]) {
            const taken = used.get(member.node) ?? new Set<number>();
            used.set(member.node, taken);
            for (const card of member.cards) {
              expect(taken.has(card)).toBe(false);
              expect(snapshot.nodes.find((each) => each.name === member.node)?.cards.some((each) => each.index === card)).toBe(true);
              taken.add(card);
            }
          }
        }
      }),
      { numRuns: 300 },
    );
  });

  it("leaves no partial reservation behind: a gang demand placed not at all changes nothing for the others", () => {
    fc.assert(
      fc.property(fleetArbitrary, demandsArbitrary, (snapshot, demands) => {
        const result = placeReplicas(snapshot, demands);
        const refusedGangs = new Set(
          result.refusals
            .filter((refusal) => {
              const demand = demands.find((each) => each.model === refusal.model);
              return demand !== undefined && refusal.unplaced === demand.count && demand.profiles.every((profile) => (profile.nodes ?? 1) > 1);
            })
            .map((refusal) => refusal.model),
        );
        if (refusedGangs.size === 0) return;
        const without = placeReplicas(snapshot, demands.filter((demand) => !refusedGangs.has(demand.model)));
        expect(without.placements).toEqual(result.placements);
      }),
      { numRuns: 300 },
    );
  });

  it("preemption for a gang stops replicas only on its members, and the whole gang fits once they are stopped", () => {
    fc.assert(
      fc.property(fleetArbitrary, profileArbitrary, (snapshot, profile) => {
        const gang = { ...profile, nodes: Math.max(2, profile.nodes ?? 2) };
        const demand: ReplicaDemand = { model: "taker", modelClass: "critical", count: 1, profiles: [gang] };
        const choice = choosePreemptions(snapshot, demand, new Map());
        if (!choice.possible) return;
        const members = new Set((choice.placement.members ?? []).map((member) => member.node));
        expect(members.size).toBe(gang.nodes);
        for (const victim of choice.victims) expect(members.has(victim.node)).toBe(true);
        const stopped = new Set(choice.victims);
        const after = placeReplicas({ ...snapshot, replicas: snapshot.replicas.filter((replica) => !stopped.has(replica)) }, [demand]);
        expect(after.placements).toHaveLength(1);
      }),
      { numRuns: 300 },
    );
  });
});
