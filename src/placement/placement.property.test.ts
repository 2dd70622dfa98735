import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { modelClasses, type EngineName, type ModelClass } from "../catalog/schema.js";
import { usableBytes } from "../plan/memory.js";
import { checkNode } from "./check-node.js";
import { choosePreemptions, preemptionGate } from "./choose-preemptions.js";
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
  cardClass: fc.constantFrom("h100", "a100"),
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
            cards.push({ index: cards.length, cardClass: group.cardClass, memoryBytes: group.memoryGiB * GiB, fabric: group.fabric });
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
          // One class per model, as the catalog has it.
        modelClass: modelClasses[(value % 5) % 3] ?? "standard",
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
  cardClass: fc.constantFrom("h100", "a100", undefined),
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
            if (profile.cardClass !== undefined) expect(card?.cardClass).toBe(profile.cardClass);
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
          const kinds = new Set(cards.map((card) => `${card?.cardClass}/${card?.fabric}/${card?.memoryBytes}`));
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
          // The reconciler's shortcut skips the search when it says no: it must never hide a preemption the search finds.
          if (choice.possible && choice.victims.length > 0) expect(preemptionGate(snapshot, models)({ model: "taker", modelClass, count: 1, profiles: [profile] })).toBe(true);
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

  it("stops no more, and no higher a class, than a search of every set of victims would", () => {
    const rank: Record<ModelClass, number> = { opportunistic: 0, standard: 1, critical: 2 };
    // Full nodes of 2-6 cards, each card (or pair) held by a replica of one of five models.
    const fullFleet: fc.Arbitrary<Snapshot> = fc
      .array(fc.record({ cards: fc.integer({ min: 2, max: 6 }), widths: fc.array(fc.integer({ min: 1, max: 2 }), { minLength: 6, maxLength: 6 }), models: fc.array(fc.nat(4), { minLength: 6, maxLength: 6 }) }), { minLength: 1, maxLength: 4 })
      .map((shapes) => {
        const nodes: SnapshotNode[] = [];
        const replicas: HeldReplica[] = [];
        shapes.forEach((shape, position) => {
          const name = `node-${position}`;
          nodes.push({ name, schedulable: true, engines: ["vllm"], cards: Array.from({ length: shape.cards }, (_, index) => ({ index, cardClass: "h100", memoryBytes: 80 * GiB, fabric: "f0" })), memoryBytes: 64 * GiB, cpuCores: 16 });
          for (let card = 0, slot = 0; card < shape.cards; slot += 1) {
            const width = Math.min(shape.widths[slot] ?? 1, shape.cards - card);
            const model = shape.models[slot] ?? 0;
            replicas.push({ id: `r-${position}-${card}`, model: `held-${model}`, profile: "p", node: name, cards: Array.from({ length: width }, (_, offset) => card + offset), memoryBytes: 0, cpuCores: 0, modelClass: modelClasses[model % 3] ?? "standard" });
            card += width;
          }
        });
        return { nodes, replicas };
      });
    fc.assert(
      fc.property(
        fullFleet,
        fc.integer({ min: 1, max: 4 }).map((gpus) => ({ name: "p", engine: "vllm" as const, cardClass: "h100", gpus, memoryBytes: 0, cpuCores: 0, bytesPerCard: undefined })),
        fc.constantFrom(...modelClasses),
        (snapshot, profile, modelClass) => {
          // Every held model at minimum 0 and the taker below none: the class rules alone decide.
          const models = new Map<string, ModelStanding>();
          for (const replica of snapshot.replicas) {
            const known = models.get(replica.model);
            models.set(replica.model, { modelClass: replica.modelClass, min: 0, replicas: (known?.replicas ?? 0) + 1 });
          }
          const choice = choosePreemptions(snapshot, { model: "taker", modelClass, count: 1, profiles: [profile] }, models);
          const taker: ModelStanding = { modelClass, min: 0, replicas: 0 };
          let bestCost: [number, number, number] | undefined;
          for (const node of snapshot.nodes) {
            const allowed = snapshot.replicas.filter((replica) => replica.node === node.name && replicasItMayTake(taker, models.get(replica.model) as ModelStanding) > 0);
            // Past 2^7 sets per node the search is too slow for a unit test.
            if (allowed.length > 7) return;
            for (let mask = 0; mask < 1 << allowed.length; mask += 1) {
              const victims = allowed.filter((_, position) => (mask & (1 << position)) !== 0);
              const gone = new Set(victims);
              const after = { nodes: snapshot.nodes, replicas: snapshot.replicas.filter((replica) => !gone.has(replica)) };
              if (!checkNode(after, profile, node.name).fits) continue;
              const ranks = victims.map((victim) => rank[victim.modelClass]);
              const cost: [number, number, number] = [Math.max(-1, ...ranks), victims.length, ranks.reduce((sum, value) => sum + value, 0)];
              if (!bestCost || cost[0] < bestCost[0] || (cost[0] === bestCost[0] && (cost[1] < bestCost[1] || (cost[1] === bestCost[1] && cost[2] < bestCost[2])))) bestCost = cost;
            }
          }
          if (!bestCost) {
            expect(choice.possible).toBe(false);
            return;
          }
          expect(choice.possible).toBe(true);
          if (!choice.possible) return;
          const ranks = choice.victims.map((victim) => rank[victim.modelClass]);
          expect([Math.max(-1, ...ranks), choice.victims.length, ranks.reduce((sum, value) => sum + value, 0)]).toEqual(bestCost);
        },
      ),
      { numRuns: 100 },
    );
  });
});
