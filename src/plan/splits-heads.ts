/**
 * Whether tensor parallelism over `cards` can split the attention: the card
 * count must divide the attention heads (each rank computes whole heads),
 * and divide the KV heads or be a multiple of them (then each KV head is
 * replicated on cards / kvHeads ranks, and its KV cache with it — see
 * kvReplication). vLLM refuses anything else at start-up, minutes into a
 * load; this is the one place the rule lives, for the planner, `model gpus`,
 * placement and the console.
 */
export function splitsHeads(cards: number, attentionHeads: number, kvHeads: number): boolean {
  if (!Number.isInteger(cards) || cards < 1) return false;
  if (attentionHeads % cards !== 0) return false;
  return kvHeads % cards === 0 || cards % kvHeads === 0;
}

/** Why splitsHeads said no, in words for the `short` list. */
export function splitsHeadsReason(cards: number, attentionHeads: number, kvHeads: number): string | undefined {
  if (splitsHeads(cards, attentionHeads, kvHeads)) return undefined;
  if (attentionHeads % cards !== 0) return `${cards} cards do not divide the ${attentionHeads} attention heads`;
  return `${cards} cards neither divide the ${kvHeads} KV heads nor are a multiple of them`;
}
