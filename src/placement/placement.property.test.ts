import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { modelClasses, type EngineName } from "../catalog/schema.js";
import { usableBytes } from "../plan/memory.js";
import { checkNode } from "./check-node.js";
import { choosePreemptions } from "./choose-preemptions.js";
import { bestFitGroup, nodeReason, type FilterContext } from "./node-filters.js";
import { defaultScoreWeights, nodeScore, packScore, type ScoreWeights } from "./node-scores.js";
import { placeReplicas } from "./place-replicas.js";
import { replicasItMayTake, type ModelStanding } from "./preemption-rules.js";
import { GiB } from "./testing/fleet-builder.js";
import type { DemandProfile, HeldReplica, Placement, ReplicaDemand, Snapshot, SnapshotCard, SnapshotNode } from "./types.js";
import { WorkingSnapshot } from "./working-snapshot.js";

const engines: readonly EngineName[] = ["vllm", "llamacpp"];

const groupArbitrary = fc.record({
  count: fc.integer({ min: 1, max: 8 }),
  gpuClass: fc.constantFrom("h100", "a100"),
  memoryGiB: fc.constantFrom(40, 80),
  fabric: fc.constantFrom("f0", "f1"),
});

const nodeArbitrary = fc.record({
  groups: fc.array(groupArbitrary, { minLength: 0, maxLength: 3 }),
  memoryGiB: fc.integer({ min: 0, max: 256 }),
  cpuCores: fc.integer({ min: 0, max: 64 }),
  engines: fc.subarray([...engines], { minLength: 1 }),
  schedulable: fc.boolean(),
});

/** A fleet of up to 8 nodes, with replicas already holding some of its cards, memory and cores. */
const fleetArbitrary = (holdings: { minLength: number; maxLength: number }): fc.Arbitrary<Snapshot> =>
  fc
    .record({ nodes: fc.array(nodeArbitrary, { minLength: 0, maxLength: 8 }), holdings: fc.array(fc.nat(), holdings) })
    .map(({ nodes, holdings }) => {
      const snapshotNodes: SnapshotNode[] = nodes.map((shape, position) => {
        const cards: SnapshotCard[] = [];
        for (const group of shape.groups) {
          for (let count = 0; count < group.count; count += 1) {
            cards.push({ index: cards.length, gpuClass: group.gpuClass, memoryBytes: group.memoryGiB * GiB, fabric: group.fabric });
          }
        }
        return {
          name: `node-${String(position).padStart(2, "0")}`,
          schedulable: shape.schedulable,
          ...(shape.schedulable ? {} : { unschedulableReason: "cordoned" }),
          engines: shape.engines,
          cards,
          memoryBytes: shape.memoryGiB * GiB,
          cpuCores: shape.cpuCores,
        };
      });
      const replicas: HeldReplica[] = [];
      const taken = new Map<string, Set<number>>();
      holdings.forEach((value, position) => {
        const holder = snapshotNodes[value % Math.max(1, snapshotNodes.length)];
        if (!holder) return;
        const used = taken.get(holder.name) ?? new Set<number>();
        taken.set(holder.name, used);
        const free = holder.cards.filter((card) => !used.has(card.index));
        const card = free[value % Math.max(1, free.length)];
        const cards = card && value % 3 !== 0 ? [card.index] : [];
        for (const index of cards) used.add(index);
        replicas.push({
          id: `r-${String(position).padStart(2, "0")}`,
          model: `held-${value % 5}`,
          profile: "p",
          node: holder.name,
          cards,
          memoryBytes: (value % 4) * GiB,
          cpuCores: value % 3,
          modelClass: modelClasses[value % 3] ?? "standard",
        });
      });
      return { nodes: snapshotNodes, replicas };
    });

const snapshotArbitrary = fleetArbitrary({ minLength: 0, maxLength: 40 });
/** Most cards held: where preemption has something to choose from. */
const crowdedArbitrary = fleetArbitrary({ minLength: 30, maxLength: 80 });

const profileArbitrary: fc.Arbitrary<DemandProfile> = fc.record({
  name: fc.constantFrom("first", "second"),
  engine: fc.constantFrom(...engines),
  gpuClass: fc.constantFrom("h100", "a100", undefined),
  gpus: fc.integer({ min: 0, max: 5 }),
  memoryBytes: fc.integer({ min: 0, max: 64 }).map((gib) => gib * GiB),
  cpuCores: fc.integer({ min: 0, max: 16 }),
  bytesPerCard: fc.option(fc.integer({ min: 10, max: 75 }).map((gib) => gib * GiB), { nil: undefined }),
});

const demandsArbitrary: fc.Arbitrary<ReplicaDemand[]> = fc
  .array(
    fc.record({
      modelClass: fc.constantFrom(...modelClasses),
      count: fc.integer({ min: 1, max: 5 }),
      profiles: fc.array(profileArbitrary, { minLength: 1, maxLength: 2 }),
    }),
    { maxLength: 6 },
  )
  .map((demands) =>
    demands.map((demand, position) => ({
      ...demand,
      model: `model-${position}`,
      profiles: demand.profiles.map((profile, index) => ({ ...profile, name: `profile-${index}` })),
    })),
  );

const runs = { numRuns: 300 };

function profileOf(demands: readonly ReplicaDemand[], placement: Placement): DemandProfile {
  const profile = demands.find((demand) => demand.model === placement.model)?.profiles.find((each) => each.name === placement.profile);
  if (!profile) throw new Error(`placement names ${placement.model}/${placement.profile}, which no demand has`);
  return profile;
}

/** The same placement without the capacity index: every node filtered and scored for every replica. */
function placeByFullScan(snapshot: Snapshot, demands: readonly ReplicaDemand[], weights: ScoreWeights): Placement[] {
  const working = new WorkingSnapshot(snapshot);
  const order = { critical: 0, standard: 1, opportunistic: 2 };
  const placements: Placement[] = [];
  for (const demand of [...demands].sort((left, right) => order[left.modelClass] - order[right.modelClass] || (left.model < right.model ? -1 : 1))) {
    const exhausted = new Set<number>();
    for (let replica = 0; replica < demand.count; replica += 1) {
      let placed = false;
      for (const [position, profile] of demand.profiles.entries()) {
        if (exhausted.has(position)) continue;
        const context: FilterContext = { profile, gpuMemoryUtilization: 0.9 };
        let best: { node: (typeof working.nodes)[number]; score: number; pack: number } | undefined;
        for (const node of working.nodes) {
          if (nodeReason(node, context)) continue;
          const group = bestFitGroup(node, context);
          const input = { node, group, freeCards: group?.free.length ?? 0, profile, model: demand.model };
          const score = nodeScore(input, weights);
          const pack = packScore(input);
          if (!best || score > best.score || (score === best.score && pack > best.pack)) best = { node, score, pack };
        }
        if (!best) {
          exhausted.add(position);
          continue;
        }
        const group = bestFitGroup(best.node, context);
        const cards = group ? group.free.slice(0, profile.gpus) : [];
        working.reserve(best.node, { model: demand.model, group, cards, memoryBytes: profile.memoryBytes, cpuCores: profile.cpuCores });
        placements.push({ model: demand.model, profile: profile.name, node: best.node.source.name, cards });
        placed = true;
        break;
      }
      if (!placed) break;
    }
  }
  return placements;
}

describe("placement properties", () => {
  it("never over-commits a card, host memory or cores, and only places where every filter passes", () => {
    fc.assert(
      fc.property(snapshotArbitrary, demandsArbitrary, (snapshot, demands) => {
        const { placements } = placeReplicas(snapshot, demands);
        const usedCards = new Map<string, Set<number>>();
        const memory = new Map<string, number>();
        const cores = new Map<string, number>();
        for (const replica of snapshot.replicas) {
          const cards = usedCards.get(replica.node) ?? new Set<number>();
          for (const card of replica.cards) cards.add(card);
          usedCards.set(replica.node, cards);
          memory.set(replica.node, (memory.get(replica.node) ?? 0) + replica.memoryBytes);
          cores.set(replica.node, (cores.get(replica.node) ?? 0) + replica.cpuCores);
        }
        for (const placement of placements) {
          const profile = profileOf(demands, placement);
          const node = snapshot.nodes.find((each) => each.name === placement.node);
          expect(node?.schedulable).toBe(true);
          expect(node?.engines).toContain(profile.engine);
          const cards = usedCards.get(placement.node) ?? new Set<number>();
          expect(placement.cards).toHaveLength(profile.gpus);
          for (const index of placement.cards) {
            expect(cards.has(index)).toBe(false);
            cards.add(index);
            const card = node?.cards.find((each) => each.index === index);
            expect(card).toBeDefined();
            if (profile.gpuClass !== undefined) expect(card?.gpuClass).toBe(profile.gpuClass);
            if (profile.bytesPerCard !== undefined) expect(usableBytes(card?.memoryBytes ?? 0, 0.9)).toBeGreaterThanOrEqual(profile.bytesPerCard);
          }
          usedCards.set(placement.node, cards);
          const heldMemory = (memory.get(placement.node) ?? 0) + profile.memoryBytes;
          const heldCores = (cores.get(placement.node) ?? 0) + profile.cpuCores;
          if (profile.memoryBytes > 0) expect(heldMemory).toBeLessThanOrEqual(node?.memoryBytes ?? 0);
          if (profile.cpuCores > 0) expect(heldCores).toBeLessThanOrEqual(node?.cpuCores ?? 0);
          memory.set(placement.node, heldMemory);
          cores.set(placement.node, heldCores);
        }
      }),
      runs,
    );
  });

  it("never splits a replica across fabrics, classes or card sizes", () => {
    fc.assert(
      fc.property(snapshotArbitrary, demandsArbitrary, (snapshot, demands) => {
        for (const placement of placeReplicas(snapshot, demands).placements) {
          const node = snapshot.nodes.find((each) => each.name === placement.node);
          const cards = placement.cards.map((index) => node?.cards.find((card) => card.index === index));
          const kinds = new Set(cards.map((card) => `${card?.gpuClass}/${card?.fabric}/${card?.memoryBytes}`));
          expect(kinds.size).toBeLessThanOrEqual(1);
        }
      }),
      runs,
    );
  });

  it("gives the same answer for the same input, in any order of nodes, replicas and demands", () => {
    fc.assert(
      fc.property(snapshotArbitrary, demandsArbitrary, (snapshot, demands) => {
        const first = placeReplicas(snapshot, demands);
        expect(placeReplicas(snapshot, demands)).toEqual(first);
        const reordered = { nodes: [...snapshot.nodes].reverse(), replicas: [...snapshot.replicas].reverse() };
        expect(placeReplicas(reordered, [...demands].reverse())).toEqual(first);
      }),
      runs,
    );
  });

  it("places exactly as a scan of every node would, for any weights (the indexes change speed, not answers)", () => {
    const weightsArbitrary = fc.oneof(fc.constant(defaultScoreWeights), fc.record({ spread: fc.integer({ min: 0, max: 5 }), pack: fc.integer({ min: 0, max: 5 }) }));
    fc.assert(
      fc.property(snapshotArbitrary, demandsArbitrary, weightsArbitrary, (snapshot, demands, weights) => {
        expect(placeReplicas(snapshot, demands, { weights }).placements).toEqual(placeByFullScan(snapshot, demands, weights));
      }),
      runs,
    );
  });

  it("agrees with checkNode: every placement passes the same filters on its node", () => {
    fc.assert(
      fc.property(snapshotArbitrary, demandsArbitrary, (snapshot, demands) => {
        const first = placeReplicas(snapshot, demands).placements[0];
        if (!first) return;
        const check = checkNode(snapshot, profileOf(demands, first), first.node, { cards: first.cards });
        expect(check).toEqual({ fits: true, cards: first.cards });
      }),
      runs,
    );
  });

  it("never preempts a critical minimum, and stops only what the class rules allow", () => {
    const standingArbitrary = fc.record({ min: fc.integer({ min: 0, max: 3 }), extra: fc.integer({ min: -2, max: 3 }) });
    fc.assert(
      fc.property(
        crowdedArbitrary,
        profileArbitrary.map((profile) => ({ ...profile, gpus: 1 + (profile.gpus % 3), memoryBytes: profile.memoryBytes % (8 * GiB) })),
        fc.constantFrom(...modelClasses),
        fc.array(standingArbitrary, { minLength: 6, maxLength: 6 }),
        (snapshot, profile, modelClass, standings) => {
          const counts = new Map<string, number>();
          for (const replica of snapshot.replicas) counts.set(replica.model, (counts.get(replica.model) ?? 0) + 1);
          const models = new Map<string, ModelStanding>();
          const classOf = new Map(snapshot.replicas.map((replica) => [replica.model, replica.modelClass]));
          for (const [model, replicas] of counts) {
            const shape = standings[Number(model.slice(-1))] ?? { min: 0, extra: 0 };
            models.set(model, { modelClass: classOf.get(model) ?? "standard", min: Math.min(shape.min, replicas), replicas });
          }
          const taker: ModelStanding = { modelClass, min: standings[5]?.min ?? 0, replicas: Math.max(0, (standings[5]?.min ?? 0) + (standings[5]?.extra ?? 0)) };
          models.set("taker", taker);
          const choice = choosePreemptions(snapshot, { model: "taker", modelClass, count: 1, profiles: [profile] }, models);
          if (!choice.possible) return;
          const stopped = new Map<string, number>();
          for (const victim of choice.victims) stopped.set(victim.model, (stopped.get(victim.model) ?? 0) + 1);
          for (const [model, count] of stopped) {
            const holder = models.get(model) as ModelStanding;
            expect(count).toBeLessThanOrEqual(replicasItMayTake(taker, holder));
            if (holder.modelClass === "critical") expect(holder.replicas - count).toBeGreaterThanOrEqual(holder.min);
          }
          // With the victims gone, the new replica passes every filter on the cards given.
          const victims = new Set(choice.victims.map((victim) => victim.id));
          const after = { nodes: snapshot.nodes, replicas: snapshot.replicas.filter((replica) => !victims.has(replica.id)) };
          expect(checkNode(after, profile, choice.placement.node, { cards: choice.placement.cards })).toEqual({ fits: true, cards: choice.placement.cards });
        },
      ),
      runs,
    );
  });
});
