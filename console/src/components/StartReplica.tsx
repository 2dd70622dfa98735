import { Group, Select, Text, TextInput } from "@mantine/core";
import { useState } from "react";
import { useNodes } from "../queries.ts";
import type { ModelView } from "../types.ts";
import { ChangeModal } from "./ChangeModal.tsx";
import { admin } from "../api.ts";

/** "0, 1" → [0, 1]; null when the text is not a list of card indices (the dialog then asks for none). */
export function cardList(text: string): number[] | null {
  const parts = text.split(",").map((part) => part.trim()).filter((part) => part !== "");
  if (!parts.every((part) => /^\d+$/.test(part))) return null;
  return parts.map(Number);
}

/**
 * `ctl replica start`: one replica of this model on a node the operator
 * names, beside what the reconciler placed. The server starts it in one step
 * (it places and sends it to the agent at once), so it answers no dry run:
 * the dialog says so and Apply makes it.
 */
export function StartReplica({ model }: { model: ModelView }) {
  const nodes = useNodes();
  const [node, setNode] = useState<string | null>(null);
  const [profile, setProfile] = useState<string | null>(null);
  const [cards, setCards] = useState("");
  const [id, setId] = useState("");
  const picked = cardList(cards);
  const body = {
    model: model.name,
    node,
    ...(profile ? { profile } : {}),
    ...(picked && picked.length > 0 ? { cards: picked } : {}),
    ...(id.trim() ? { id: id.trim() } : {}),
  };
  const ready = (nodes.data ?? []).filter((each) => each.state === "ready");
  return (
    <ChangeModal label="Start replica" title={`Start a replica of ${model.name} by hand on a node`} request={node && picked !== null ? admin.startReplica(body) : null} follow={model.name}>
      <Group grow align="start">
        <Select label="node" placeholder="pick a node" data={ready.map((each) => each.name)} value={node} onChange={setNode} searchable />
        {model.profiles.length > 1 && <Select label="profile (default: the first)" data={model.profiles.map((each) => each.name)} value={profile} onChange={setProfile} clearable />}
      </Group>
      <Group grow align="start">
        <TextInput label="cards (e.g. 0,1; empty: the lowest free ones)" value={cards} onChange={(event) => setCards(event.currentTarget.value)} error={picked === null ? "card indices separated by commas" : undefined} />
        <TextInput label="replica id (empty: the model's name and a random suffix)" value={id} onChange={(event) => setId(event.currentTarget.value)} />
      </Group>
      <Text size="xs">The reconciler never stops a replica started by hand: stop it from this table when it is no longer wanted.</Text>
    </ChangeModal>
  );
}
