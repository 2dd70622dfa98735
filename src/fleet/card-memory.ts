/**
 * The memory of a card llmgw may plan with: its total less what processes
 * llmgw did not start hold on it. A card full of someone else's training job
 * reports 80 GiB like an empty one; counting it as free sent replicas there
 * that failed at load with "CUDA out of memory". Plan, placement and the
 * console's bars all take a card's room from here, so they cannot disagree.
 */
export function cardMemoryForLlmgw(totalBytes: number, foreignBytes: number | null | undefined): number {
  return Math.max(0, totalBytes - Math.max(0, foreignBytes ?? 0));
}
