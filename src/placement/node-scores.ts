import type { DemandProfile } from "./types.js";
import type { CardGroup, WorkingNode } from "./working-snapshot.js";

/**
 * Score plugins, as in the Kubernetes scheduler framework: each rates a node
 * that passed every filter from 0 to 1, and the weighted mean decides. The
 * highest wins; ties go to the better fit, then to the first node by name, so
 * the answer never depends on the order the fleet was listed in.
 */
export interface ScoreInput {
  readonly node: WorkingNode;
  /** The card group the replica would take; undefined for a CPU profile. */
  readonly group: CardGroup | undefined;
  /** Free cards in that group before the replica takes its own. */
  readonly freeCards: number;
  readonly profile: DemandProfile;
  readonly model: string;
}

/** Non-negative weights; placement counts a negative one as 0. */
export interface ScoreWeights {
  /** Spread one model's replicas over nodes, so losing a node loses one replica, not all. */
  readonly spread: number;
  /** Fill partly used nodes first, keeping whole nodes free for large models. */
  readonly pack: number;
}

/**
 * Spread outweighs pack two to one: a second replica of a model goes to
 * another node whenever one fits (spread's 1 against at most 0.5 with pack's
 * full 1 added), and among those to the fullest.
 */
export const defaultScoreWeights: ScoreWeights = { spread: 2, pack: 1 };

/** 1 on a node without the model, 1/2 with one replica of it, 1/3 with two... */
export function spreadScore(input: ScoreInput): number {
  return 1 / (1 + (input.node.modelReplicas.get(input.model) ?? 0));
}

const GiB = 1024 ** 3;

/**
 * Best fit: 1 when the replica takes the group's last free cards, less the
 * more it leaves free. A CPU profile packs by host memory the same way: 1
 * when it takes the last GiB, less the more GiB it leaves free. Each depends
 * on what is left free alone, which is what lets the indexes find the best
 * node without scoring every node.
 */
export function packScore(input: ScoreInput): number {
  if (input.group) return 1 / (1 + input.freeCards - input.profile.gpus);
  const leftGiB = Math.max(0, input.node.freeMemoryBytes - Math.max(0, input.profile.memoryBytes)) / GiB;
  return 1 / (1 + leftGiB);
}

export function nodeScore(input: ScoreInput, weights: ScoreWeights): number {
  const sum = weights.spread + weights.pack;
  if (sum <= 0) return 0;
  return (weights.spread * spreadScore(input) + weights.pack * packScore(input)) / sum;
}

/** The highest score a node holding `replicasThere` replicas of the model can reach (a perfect fit). */
export function scoreCeiling(replicasThere: number, weights: ScoreWeights): number {
  const sum = weights.spread + weights.pack;
  if (sum <= 0) return 0;
  return (weights.spread * (1 / (1 + replicasThere)) + weights.pack * 1) / sum;
}
