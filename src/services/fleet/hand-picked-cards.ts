import type { Inventory } from "../../protocol/index.js";
import { DomainError } from "../../errors/light.js";

/**
 * A node that lacks the cards altogether (another class, or fewer in all) is
 * told apart from one whose cards are busy: "stop a replica on that node"
 * sends someone to stop work that could never make room.
 */
export function checkNodeHasCards(node: string, inventory: Inventory, profile: { name: string; gpus: number; gpu_class: string | undefined }, model: string): void {
  const matching = inventory.gpus.filter((gpu) => profile.gpu_class === undefined || gpu.class === profile.gpu_class).length;
  if (matching >= profile.gpus) return;
  const counts = new Map<string, number>();
  for (const gpu of inventory.gpus) counts.set(gpu.class, (counts.get(gpu.class) ?? 0) + 1);
  const has = [...counts].map(([cardClass, count]) => `${count}× ${cardClass}`).join(", ") || "no GPU cards";
  const kind = profile.gpu_class === undefined ? "" : ` ${profile.gpu_class}`;
  const wanted = `${profile.gpus}${kind} card${profile.gpus === 1 ? "" : "s"}`;
  throw new DomainError(
    "cards_missing",
    matching === 0
      ? `node ${node} has no${kind} cards (it has ${has}); ${model}/${profile.name} needs ${wanted}`
      : `node ${node} has only ${matching}${kind} card${matching === 1 ? "" : "s"} in all (it has ${has}); ${model}/${profile.name} needs ${wanted}`,
    `Choose a node with ${wanted} (\`llmgw ctl nodes\` lists each node's cards), or a profile of ${model} for the cards this node has.`,
  );
}

/**
 * Cards named by hand get the checks chooseCards makes by construction: a
 * repeated card, a wrong count or class, or a card in use would reach the
 * agent and start an engine that cannot load, or two on one card.
 */
export function checkHandPickedCards(
  cards: readonly number[],
  context: { node: string; inventory: Inventory; profile: { name: string; gpus: number; gpu_class: string | undefined }; model: string; cardOwner: ReadonlyMap<number, string>; free: readonly string[] },
): void {
  const { node, inventory, profile, model, cardOwner, free } = context;
  const what = `${model}/${profile.name}`;
  const unknownCards = cards.filter((card) => !inventory.gpus.some((gpu) => gpu.index === card));
  if (unknownCards.length > 0) {
    throw new DomainError("invalid_input", `node ${node} has no card ${unknownCards.join(", ")}`, `Its cards: ${inventory.gpus.map((gpu) => gpu.index).join(", ") || "none"}.`);
  }
  const repeated = cards.find((card, position) => cards.indexOf(card) !== position);
  if (repeated !== undefined) {
    throw new DomainError("invalid_input", `cards ${cards.join(",")}: card ${repeated} is named twice`, "Name each card once.");
  }
  if (cards.length !== profile.gpus) {
    throw new DomainError(
      "invalid_input",
      `${what} needs ${profile.gpus} card${profile.gpus === 1 ? "" : "s"}; ${cards.length} given (${cards.join(",") || "none"})`,
      `Name ${profile.gpus} cards, or leave --cards out and the lowest free ones are taken.`,
    );
  }
  for (const card of cards) {
    const cardClass = inventory.gpus.find((gpu) => gpu.index === card)?.class;
    if (profile.gpu_class !== undefined && cardClass !== profile.gpu_class) {
      throw new DomainError(
        "invalid_input",
        `card ${card} on node ${node} is a ${cardClass ?? "?"}, but ${what} needs ${profile.gpu_class}`,
        `Choose cards of class ${profile.gpu_class} (free: ${free.join(", ") || "none"}), or another profile.`,
      );
    }
    const owner = cardOwner.get(card);
    if (owner !== undefined) {
      throw new DomainError("cards_busy", `card ${card} on node ${node} is used by replica ${owner}`, `Choose free cards (free: ${free.join(", ") || "none"}), or stop ${owner} first.`);
    }
  }
}
